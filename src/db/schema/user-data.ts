import { bigint, jsonb, pgTable, primaryKey, timestamp, varchar } from 'drizzle-orm/pg-core'
import { users } from './users.ts'

/** The app's free-form per-user documents: onboarding state, preferences, settings. */
export type UserDataKind = 'onboarding' | 'preferences' | 'settings'

export const userData = pgTable(
  'user_data',
  {
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    kind: varchar('kind', { length: 32 }).$type<UserDataKind>().notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.kind] })],
)

export type UserDataRow = typeof userData.$inferSelect
