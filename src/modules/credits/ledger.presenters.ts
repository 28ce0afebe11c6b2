import type { CreditTransactionRow } from '../../db/schema/index.ts'
import { creditNumber } from '../../lib/decimal.ts'
import { laravelDate } from '../../lib/laravel.ts'
import type { TransactionResponse } from './ledger.schemas.ts'

export type { TransactionResponse } from './ledger.schemas.ts'

/** A ledger row as the app sees it; the admin's id stays internal. */
export function presentTransaction(row: CreditTransactionRow): TransactionResponse {
  return {
    id: row.id,
    kind: row.kind,
    amount: creditNumber(row.amount),
    balance_after: creditNumber(row.balanceAfter),
    reference: row.reference,
    reason: row.reason,
    created_at: laravelDate(row.createdAt),
  }
}
