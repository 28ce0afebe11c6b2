import { sql } from 'drizzle-orm'
import { bigint, index, integer, jsonb, pgTable, text, varchar } from 'drizzle-orm/pg-core'
import { rememberTokens } from './remember-tokens.ts'
import { users } from './users.ts'

/** What a session carries besides its user: the CSRF token, a pending two-factor login. */
export interface SessionPayload {
  csrfToken: string
  /**
   * A right password awaiting its second factor; `startedAt` (unix seconds) lets it expire, and
   * `credentials` (a digest of the password hash it was started with) ends it when the password changes.
   */
  pendingLogin?: { userId: number; remember: boolean; startedAt: number; credentials?: string }
  /** When (unix seconds) the signed-in user last confirmed the password (Fortify's password.confirm). */
  passwordConfirmedAt?: number
}

/** Laravel's database session table; `id` holds the SHA-256 of the cookie value, never the value itself. */
export const sessions = pgTable(
  'sessions',
  {
    id: varchar('id', { length: 64 }).primaryKey(),
    userId: bigint('user_id', { mode: 'number' }).references(() => users.id, { onDelete: 'cascade' }),
    ipAddress: varchar('ip_address', { length: 45 }),
    userAgent: text('user_agent'),
    payload: jsonb('payload').$type<SessionPayload>().notNull(),
    lastActivity: integer('last_activity').notNull(),
    // When (unix seconds) the session began: it ends SESSION_ABSOLUTE_LIFETIME later, however active.
    createdAt: integer('created_at').notNull().default(sql`extract(epoch from now())::integer`),
    // The remembered device this session belongs to: logout forgets it, "log out other sessions" keeps it.
    rememberTokenId: varchar('remember_token_id', { length: 64 }).references(() => rememberTokens.id, {
      onDelete: 'set null',
    }),
  },
  (t) => [
    index('sessions_user_id_index').on(t.userId),
    index('sessions_last_activity_index').on(t.lastActivity),
    index('sessions_created_at_index').on(t.createdAt),
    // Forgetting a device sets its sessions' column to null: found by this index, not a scan.
    index('sessions_remember_token_id_index').on(t.rememberTokenId),
  ],
)

export type SessionRow = typeof sessions.$inferSelect
