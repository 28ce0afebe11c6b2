import { sql } from 'drizzle-orm'
import { bigint, boolean, index, pgTable, text, timestamp, uniqueIndex, varchar } from 'drizzle-orm/pg-core'

/** SQL: whether `users.password` is a bcrypt hash (`$2a$`, `$2b$`, `$2y$`), and its two-digit cost. */
export const IS_BCRYPT = sql.raw(`"users"."password" like '$2_$%'`)
export const BCRYPT_COST = sql.raw(`substr("users"."password", 5, 2)`)

export const users = pgTable(
  'users',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    name: varchar('name', { length: 255 }).notNull(),
    email: varchar('email', { length: 255 }).notNull(),
    // A new address asked for on the profile: `email` (sign-in, password reset) until this one is verified.
    pendingEmail: varchar('pending_email', { length: 255 }),
    emailVerifiedAt: timestamp('email_verified_at', { withTimezone: true, precision: 6 }),
    password: text('password').notNull(),
    isAdmin: boolean('is_admin').notNull().default(false),
    blockedAt: timestamp('blocked_at', { withTimezone: true, precision: 6 }),
    twoFactorSecret: text('two_factor_secret'),
    twoFactorRecoveryCodes: text('two_factor_recovery_codes'),
    twoFactorConfirmedAt: timestamp('two_factor_confirmed_at', { withTimezone: true, precision: 6 }),
    // The last TOTP time step accepted, so one code cannot sign in twice (Fortify caches the same).
    twoFactorLastStep: bigint('two_factor_last_step', { mode: 'number' }),
    profilePhotoPath: text('profile_photo_path'),
    phone: varchar('phone', { length: 32 }),
    timezone: varchar('timezone', { length: 64 }),
    country: varchar('country', { length: 2 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
  },
  (t) => [
    // Emails are unique whatever their case.
    uniqueIndex('users_email_lower_unique').on(sql`lower(${t.email})`),
    // The cost of the bcrypt hashes imported from the Laravel original and not yet rehashed: a login
    // spends that much on a decoy for every other account (see users.service verifyCredentials).
    index('users_bcrypt_cost_index').on(sql`${BCRYPT_COST}`).where(sql`${IS_BCRYPT}`),
  ],
)

export type UserRow = typeof users.$inferSelect
export type NewUserRow = typeof users.$inferInsert
