import { and, asc, eq, inArray, isNull, lt, lte, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { type OutboxRow, outbox } from '../../db/schema/index.ts'

export interface OutboxStatus {
  pending: number
  failed: number
  sent: number
  /** When the oldest row still waiting was queued; null when none waits. */
  oldestPendingAt: Date | null
}

const pending = and(isNull(outbox.sentAt), isNull(outbox.failedAt))

/** Every query on the outbox table; `db` may be a transaction. */
export function createOutboxRepository({ db }: { db: Db }) {
  return {
    /** Adds a row, due at once. */
    async insert(kind: string, payload: Record<string, unknown>, now: Date): Promise<void> {
      await db.insert(outbox).values({ kind, payload, availableAt: now, createdAt: now })
    },

    /**
     * Claims up to `limit` due rows of `kinds` by leasing them: their `available_at` moves to
     * `leaseUntil` and `attempts` counts this try, in one short transaction. FOR UPDATE SKIP LOCKED
     * makes concurrent claimers (other instances) take other rows instead of waiting for these; once
     * committed, the lease makes them not due for anyone until it runs out.
     */
    async claimDue(kinds: string[], now: Date, leaseUntil: Date, limit: number): Promise<OutboxRow[]> {
      if (kinds.length === 0) return []
      return db.transaction(async (tx) => {
        const due = await tx
          .select({ id: outbox.id })
          .from(outbox)
          .where(and(pending, inArray(outbox.kind, kinds), lte(outbox.availableAt, now)))
          .orderBy(asc(outbox.availableAt), asc(outbox.id))
          .limit(limit)
          .for('update', { skipLocked: true })
        if (due.length === 0) return []
        return tx
          .update(outbox)
          .set({ availableAt: leaseUntil, attempts: sql`${outbox.attempts} + 1` })
          .where(
            inArray(
              outbox.id,
              due.map((row) => row.id),
            ),
          )
          .returning()
      })
    },

    /**
     * Gives back a row whose try was interrupted by a stop: due at once, and that try not counted.
     * Only while the lease it was claimed with (`leasedUntil`) still holds it, so a row another
     * instance has taken since is left alone.
     */
    async release(id: number, leasedUntil: Date, now: Date): Promise<void> {
      await db
        .update(outbox)
        .set({ availableAt: now, attempts: sql`${outbox.attempts} - 1` })
        .where(and(eq(outbox.id, id), eq(outbox.availableAt, leasedUntil), pending))
    },

    /** Records a delivery. */
    async markSent(id: number, now: Date): Promise<void> {
      await db.update(outbox).set({ sentAt: now }).where(eq(outbox.id, id))
    },

    /** Records a failed try: due again at `retryAt`, or given up on when `retryAt` is null. */
    async markFailedAttempt(id: number, error: string, now: Date, retryAt: Date | null): Promise<void> {
      await db
        .update(outbox)
        .set(retryAt ? { lastError: error, availableAt: retryAt } : { lastError: error, failedAt: now })
        .where(eq(outbox.id, id))
    },

    /** Deletes the rows delivered before `sentBefore` (failed and waiting ones stay); answers how many. */
    async deleteSentBefore(sentBefore: Date): Promise<number> {
      const rows = await db.delete(outbox).where(lt(outbox.sentAt, sentBefore)).returning({ id: outbox.id })
      return rows.length
    },

    /** Counts for operators. */
    async status(): Promise<OutboxStatus> {
      const [row] = await db
        .select({
          pending: sql<number>`count(*) filter (where ${pending})::int`,
          failed: sql<number>`count(*) filter (where ${outbox.failedAt} is not null)::int`,
          sent: sql<number>`count(*) filter (where ${outbox.sentAt} is not null)::int`,
          oldestPendingAt: sql<Date | null>`min(${outbox.createdAt}) filter (where ${pending})`.mapWith(
            outbox.createdAt,
          ),
        })
        .from(outbox)
      return {
        pending: row?.pending ?? 0,
        failed: row?.failed ?? 0,
        sent: row?.sent ?? 0,
        oldestPendingAt: row?.oldestPendingAt ?? null,
      }
    },
  }
}

export type OutboxRepository = ReturnType<typeof createOutboxRepository>

/** The `outbox:status` report: counts, and how long the oldest waiting row has waited. */
export function formatOutboxStatus(status: OutboxStatus, now: Date): string {
  const oldest = status.oldestPendingAt
  const age = oldest ? Math.max(0, Math.round((now.getTime() - oldest.getTime()) / 1000)) : null
  return [
    `pending: ${status.pending}`,
    `failed: ${status.failed}`,
    `sent: ${status.sent}`,
    `oldest pending: ${oldest ? `queued ${age} s ago (${oldest.toISOString()})` : 'none'}`,
  ].join('\n')
}
