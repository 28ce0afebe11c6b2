import type { Db } from '../../../db/client.ts'
import type { AdminAuditAction } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { presentAuditRecord } from './admin-audit.presenters.ts'
import { createAdminAuditRepository } from './admin-audit.repository.ts'
import type { AdminAuditRecordResponse } from './admin-audit.schemas.ts'

/** How many audit records an admin screen lists: the newest. */
export const RECENT_AUDIT_RECORDS = 25

/** Who made an admin change, and from which address (request.ip: the client, behind TRUSTED_PROXIES). */
export interface AuditActor {
  id: number
  email: string
  ipAddress: string | null
}

/** What changed: one field (or one money change) of one user, as it was and became, and why. */
export interface AuditChange {
  action: AdminAuditAction
  subjectUserId: number
  reason: string | null
  before: Record<string, unknown>
  after: Record<string, unknown>
}

/**
 * The admin audit trail: a record per admin change of a user's money or account, written in the
 * change's own transaction (so it commits or rolls back with it), never changed afterwards.
 */
export function createAdminAuditService({ db, clock }: { db: Db; clock: Clock }) {
  const repo = createAdminAuditRepository({ db })
  return {
    /** Records the change inside `tx`, the transaction that makes it. */
    async record(tx: Db, actor: AuditActor, change: AuditChange): Promise<void> {
      await createAdminAuditRepository({ db: tx }).insert({
        adminId: actor.id,
        adminEmail: actor.email,
        subjectUserId: change.subjectUserId,
        action: change.action,
        reason: change.reason,
        before: change.before,
        after: change.after,
        ipAddress: actor.ipAddress?.slice(0, 45) ?? null,
        createdAt: clock.now(),
      })
    },

    /** The newest records about one user, newest first. */
    async recent(subjectUserId: number, limit = RECENT_AUDIT_RECORDS): Promise<AdminAuditRecordResponse[]> {
      return (await repo.recentOf(subjectUserId, limit)).map(presentAuditRecord)
    },
  }
}

export type AdminAuditService = ReturnType<typeof createAdminAuditService>
