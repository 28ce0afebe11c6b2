import { pgTable, text, timestamp, varchar } from 'drizzle-orm/pg-core'

/** Laravel's password_reset_tokens: one live token per email, stored as a hash, never in clear. */
export const passwordResetTokens = pgTable('password_reset_tokens', {
  email: varchar('email', { length: 255 }).primaryKey(),
  token: text('token').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, precision: 6 }).notNull(),
})

export type PasswordResetTokenRow = typeof passwordResetTokens.$inferSelect
