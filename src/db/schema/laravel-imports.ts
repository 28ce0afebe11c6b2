import { bigint, pgTable, text, timestamp, uniqueIndex, varchar } from 'drizzle-orm/pg-core'
import { creditHolds } from './credits.ts'
import { users } from './users.ts'

/**
 * Users brought across from the Laravel original by `import:laravel`, by their id there: importing
 * again finds them and changes nothing, and the original's remember cookies name them by it.
 */
export const laravelImportedUsers = pgTable(
  'laravel_imported_users',
  {
    oldId: bigint('old_id', { mode: 'number' }).primaryKey(),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    // SHA-256 of the original's users.remember_token: its remember_web_* cookie signs the user in
    // during the cutover window. Null when it had none, and once the password changes here.
    rememberTokenDigest: varchar('remember_token_digest', { length: 64 }),
    // The bcrypt hash the original knew, which its remember cookie names (raw or as an HMAC); kept
    // apart from users.password, which the first sign-in rehashes. Null once the password changes here.
    legacyPasswordHash: text('legacy_password_hash'),
    importedAt: timestamp('imported_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('laravel_imported_users_user_id_unique').on(t.userId)],
)

export type LaravelImportedUserRow = typeof laravelImportedUsers.$inferSelect

/**
 * Holds brought across from the Laravel original by `import:laravel-credits`: which file each came
 * from (importing it again finds them and changes nothing) and when the original created it (the
 * hold itself counts as created at the import, so its expiry runs from there: docs/credits.md).
 */
export const laravelImportedHolds = pgTable('laravel_imported_holds', {
  holdId: bigint('hold_id', { mode: 'number' })
    .primaryKey()
    .references(() => creditHolds.id, { onDelete: 'cascade' }),
  /** `laravel-import:` and the first 12 hex digits of the holds file's SHA-256. */
  reference: varchar('reference', { length: 191 }).notNull(),
  originalCreatedAt: timestamp('original_created_at', { withTimezone: true, precision: 6 }).notNull(),
  importedAt: timestamp('imported_at', { withTimezone: true, precision: 6 }).notNull(),
})

export type LaravelImportedHoldRow = typeof laravelImportedHolds.$inferSelect
