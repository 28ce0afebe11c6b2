import { bigint, index, pgTable, text, timestamp, varchar } from 'drizzle-orm/pg-core'
import { users } from './users.ts'

export const SUPPORT_KINDS = ['contact', 'support', 'issue'] as const
export type SupportKind = (typeof SUPPORT_KINDS)[number]

/** What people sent through the contact form, the support request and the issue report. */
export const supportTickets = pgTable(
  'support_tickets',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    kind: varchar('kind', { length: 16 }).$type<SupportKind>().notNull(),
    // Null for the public contact form; kept (set null) when the account is deleted later.
    userId: bigint('user_id', { mode: 'number' }).references(() => users.id, { onDelete: 'set null' }),
    name: varchar('name', { length: 255 }).notNull(),
    email: varchar('email', { length: 255 }).notNull(),
    subject: varchar('subject', { length: 255 }).notNull(),
    message: text('message').notNull(),
    category: varchar('category', { length: 64 }),
    severity: varchar('severity', { length: 16 }),
    pageUrl: varchar('page_url', { length: 2048 }),
    ipAddress: varchar('ip_address', { length: 45 }),
    userAgent: text('user_agent'),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [index('support_tickets_kind_created_at_index').on(t.kind, t.createdAt)],
)

export type SupportTicketRow = typeof supportTickets.$inferSelect
