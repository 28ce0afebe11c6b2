import { bigint, index, jsonb, pgTable, text, timestamp, varchar } from 'drizzle-orm/pg-core'
import { users } from './users.ts'

/** The user's trading activity log; writing to it never touches credits. */
export const activities = pgTable(
  'activities',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: varchar('type', { length: 64 }).notNull(),
    description: text('description'),
    symbol: varchar('symbol', { length: 32 }),
    brokerAccountHash: varchar('broker_account_hash', { length: 191 }),
    brokerOrderId: varchar('broker_order_id', { length: 191 }),
    advancedOrderType: varchar('advanced_order_type', { length: 32 }),
    payload: jsonb('payload').$type<Record<string, unknown>>(),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [index('activities_user_id_id_index').on(t.userId, t.id)],
)

export type ActivityRow = typeof activities.$inferSelect
