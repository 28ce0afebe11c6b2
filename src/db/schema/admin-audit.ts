import { bigint, index, jsonb, pgTable, text, timestamp, varchar } from 'drizzle-orm/pg-core'

export const ADMIN_AUDIT_ACTIONS = [
  'billing.adjust',
  'billing.package',
  'user.email',
  'user.password',
  'user.role',
  'user.block',
  'user.unblock',
  'user.delete',
] as const
export type AdminAuditAction = (typeof ADMIN_AUDIT_ACTIONS)[number]

/**
 * What an admin changed about a user's money or account: who, when, what, before and after, from
 * which address, and why. Append-only: a trigger refuses every UPDATE and DELETE, and the ids are
 * plain columns (no foreign keys), so the record outlives both the admin's and the user's account.
 */
export const adminAuditRecords = pgTable(
  'admin_audit_records',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    adminId: bigint('admin_id', { mode: 'number' }).notNull(),
    adminEmail: varchar('admin_email', { length: 255 }).notNull(),
    subjectUserId: bigint('subject_user_id', { mode: 'number' }).notNull(),
    action: varchar('action', { length: 64 }).$type<AdminAuditAction>().notNull(),
    reason: text('reason'),
    before: jsonb('before').$type<Record<string, unknown>>().notNull(),
    after: jsonb('after').$type<Record<string, unknown>>().notNull(),
    ipAddress: varchar('ip_address', { length: 45 }),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [index('admin_audit_records_subject_user_id_id_index').on(t.subjectUserId, t.id)],
)

export type AdminAuditRecordRow = typeof adminAuditRecords.$inferSelect
