import { creditNumber } from '../../lib/decimal.ts'
import { laravelDate } from '../../lib/laravel.ts'
import type { TransactionWithPurchase } from './ledger.repository.ts'
import type { TransactionResponse } from './ledger.schemas.ts'

export type { TransactionResponse } from './ledger.schemas.ts'

/**
 * A ledger row as the app sees it; the admin's id stays internal. `purchase` names the purchase a
 * purchase, refund or dispute row belongs to: its package, its checkout reference (the purchase
 * row's `reference`) and when it was bought, so a refund reads as "of the Pro package of 1 December".
 */
export function presentTransaction({
  transaction: row,
  purchase,
}: TransactionWithPurchase): TransactionResponse {
  return {
    id: row.id,
    kind: row.kind,
    amount: creditNumber(row.amount),
    balance_after: creditNumber(row.balanceAfter),
    reference: row.reference,
    reason: row.reason,
    created_at: laravelDate(row.createdAt),
    purchase: purchase
      ? {
          package_id: purchase.packageId,
          reference: purchase.checkoutSessionId,
          created_at: laravelDate(purchase.createdAt),
        }
      : null,
  }
}
