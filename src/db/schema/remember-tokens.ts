import { bigint, index, integer, pgTable, text, varchar } from 'drizzle-orm/pg-core'
import { users } from './users.ts'

/**
 * "Remember me": one row per remembered device. `id` holds the SHA-256 of the cookie value, never
 * the value itself. A session started or kept by it names it (`sessions.remember_token_id`).
 */
export const rememberTokens = pgTable(
  'remember_tokens',
  {
    id: varchar('id', { length: 64 }).primaryKey(),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    ipAddress: varchar('ip_address', { length: 45 }),
    userAgent: text('user_agent'),
    // Unix seconds: when it was issued, when it last started a session, and when it stops working.
    createdAt: integer('created_at').notNull(),
    lastUsedAt: integer('last_used_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [
    index('remember_tokens_user_id_index').on(t.userId),
    index('remember_tokens_expires_at_index').on(t.expiresAt),
  ],
)

export type RememberTokenRow = typeof rememberTokens.$inferSelect
