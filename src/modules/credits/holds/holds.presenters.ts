import type { CreditHoldRow } from '../../../db/schema/index.ts'
import { creditNumber } from '../../../lib/decimal.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import type { HoldResponse } from './holds.schemas.ts'

/** A hold as the app sees it (the owner is implied: holds are only ever shown to their user). */
export function presentHold(row: CreditHoldRow): HoldResponse {
  return {
    id: row.id,
    status: row.status,
    broker_parent_order_id: row.brokerParentOrderId,
    broker_account_hash: row.brokerAccountHash,
    credits_amount: creditNumber(row.creditsAmount),
    transferred_from: row.transferredFrom,
    captured_at: laravelDate(row.capturedAt),
    released_at: laravelDate(row.releasedAt),
    created_at: laravelDate(row.createdAt),
    updated_at: laravelDate(row.updatedAt),
  }
}
