import { sql } from 'drizzle-orm'
import { bigint, index, integer, jsonb, pgTable, text, timestamp, varchar } from 'drizzle-orm/pg-core'

/**
 * Mail (and later other side effects) written in the same transaction as the change that causes
 * it; a worker delivers each row with retries, claiming rows with FOR UPDATE SKIP LOCKED so several
 * instances never send one twice.
 */
export const outbox = pgTable(
  'outbox',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    kind: varchar('kind', { length: 32 }).notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    attempts: integer('attempts').notNull().default(0),
    availableAt: timestamp('available_at', { withTimezone: true, precision: 6 }).notNull(),
    lastError: text('last_error'),
    sentAt: timestamp('sent_at', { withTimezone: true, precision: 6 }),
    failedAt: timestamp('failed_at', { withTimezone: true, precision: 6 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [
    // The worker's query: pending rows that are due.
    index('outbox_pending_index').on(t.availableAt).where(sql`${t.sentAt} is null and ${t.failedAt} is null`),
  ],
)

export type OutboxRow = typeof outbox.$inferSelect
