import { type Static, Type } from 'typebox'

const Timestamp = Type.String({ format: 'date-time', examples: ['2024-05-01T12:34:56.000000Z'] })

/** One row of the user's ledger (`GET /api/transaction-history`). */
export const TransactionResponse = Type.Object({
  id: Type.Integer(),
  kind: Type.String({ examples: ['purchase', 'admin_adjustment', 'package', 'hold_capture', 'feature_use'] }),
  amount: Type.Number({ description: 'Signed: a credit is positive, a debit negative.' }),
  balance_after: Type.Number(),
  reference: Type.Union([Type.String(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  purchase: Type.Union(
    [
      Type.Object({
        package_id: Type.String({ examples: ['pro'] }),
        reference: Type.String({ description: 'The checkout reference, as the purchase row shows it.' }),
        created_at: Timestamp,
      }),
      Type.Null(),
    ],
    { description: 'The purchase a purchase, refund or dispute row belongs to; null for the others.' },
  ),
})
export type TransactionResponse = Static<typeof TransactionResponse>
