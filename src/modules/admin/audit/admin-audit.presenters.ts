import type { AdminAuditRecordRow } from '../../../db/schema/index.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import type { AdminAuditRecordResponse } from './admin-audit.schemas.ts'

export function presentAuditRecord(row: AdminAuditRecordRow): AdminAuditRecordResponse {
  return {
    id: row.id,
    action: row.action,
    admin_id: row.adminId,
    admin_email: row.adminEmail,
    user_id: row.subjectUserId,
    reason: row.reason,
    before: row.before,
    after: row.after,
    ip_address: row.ipAddress,
    created_at: laravelDate(row.createdAt),
  }
}
