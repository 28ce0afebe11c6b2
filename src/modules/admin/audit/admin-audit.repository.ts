import { desc, eq } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { type AdminAuditRecordRow, adminAuditRecords } from '../../../db/schema/index.ts'

export type NewAdminAuditRecord = typeof adminAuditRecords.$inferInsert

/**
 * The one writer of admin_audit_records: it only inserts (a trigger refuses every UPDATE and
 * DELETE), and reads a subject's records newest first. Takes a db or the change's transaction.
 */
export function createAdminAuditRepository({ db }: { db: Db }) {
  return {
    async insert(record: NewAdminAuditRecord): Promise<AdminAuditRecordRow> {
      const [row] = await db.insert(adminAuditRecords).values(record).returning()
      if (!row) throw new Error('admin audit record was not inserted')
      return row
    },

    /** The newest `limit` records about one user (by id: the order they were committed in, per subject). */
    recentOf: (subjectUserId: number, limit: number): Promise<AdminAuditRecordRow[]> =>
      db
        .select()
        .from(adminAuditRecords)
        .where(eq(adminAuditRecords.subjectUserId, subjectUserId))
        .orderBy(desc(adminAuditRecords.id))
        .limit(limit),
  }
}
