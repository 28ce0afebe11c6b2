import type { ActivityRow } from '../../db/schema/index.ts'
import { laravelDate } from '../../lib/laravel.ts'
import type { Activity } from './activities.schemas.ts'

export function presentActivity(row: ActivityRow): Activity {
  return {
    id: row.id,
    user_id: row.userId,
    type: row.type,
    description: row.description,
    symbol: row.symbol,
    broker_account_hash: row.brokerAccountHash,
    broker_order_id: row.brokerOrderId,
    advanced_order_type: row.advancedOrderType,
    payload: row.payload,
    created_at: laravelDate(row.createdAt),
    updated_at: laravelDate(row.updatedAt),
  }
}
