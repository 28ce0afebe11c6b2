import { and, count, desc, eq } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { type CreditHoldRow, creditHolds, type HoldStatus } from '../../../db/schema/index.ts'

export interface NewHold {
  userId: number
  brokerParentOrderId: string
  brokerAccountHash: string | null
  creditsAmount: string
}

/** Every query on credit_holds, always through the owner's id; takes a db or a transaction. */
export function createHoldsRepository({ db }: { db: Db }) {
  const owned = (userId: number, orderId: string) =>
    and(eq(creditHolds.userId, userId), eq(creditHolds.brokerParentOrderId, orderId))

  return {
    async findByOrder(userId: number, orderId: string): Promise<CreditHoldRow | undefined> {
      const [row] = await db.select().from(creditHolds).where(owned(userId, orderId)).limit(1)
      return row
    },

    async insert(hold: NewHold, now: Date): Promise<CreditHoldRow> {
      const [row] = await db
        .insert(creditHolds)
        .values({ ...hold, status: 'held', createdAt: now, updatedAt: now })
        .returning()
      if (!row) throw new Error('credit_holds insert returned no row')
      return row
    },

    /** Moves a held hold to `status`; answers false when it was no longer held. */
    async settle(id: number, status: Exclude<HoldStatus, 'held'>, now: Date): Promise<boolean> {
      const rows = await db
        .update(creditHolds)
        .set({
          status,
          updatedAt: now,
          ...(status === 'captured' ? { capturedAt: now } : { releasedAt: now }),
        })
        .where(and(eq(creditHolds.id, id), eq(creditHolds.status, 'held')))
        .returning({ id: creditHolds.id })
      return rows.length > 0
    },

    /** Re-points a hold at another parent order, remembering the one it came from. */
    async moveToOrder(id: number, from: string, to: string, now: Date): Promise<void> {
      await db
        .update(creditHolds)
        .set({ brokerParentOrderId: to, transferredFrom: from, updatedAt: now })
        .where(eq(creditHolds.id, id))
    },

    async countForUser(userId: number): Promise<number> {
      const [row] = await db.select({ n: count() }).from(creditHolds).where(eq(creditHolds.userId, userId))
      return row?.n ?? 0
    },

    /** One page of the user's holds, newest first. */
    async pageForUser(userId: number, limit: number, offset: number): Promise<CreditHoldRow[]> {
      return db
        .select()
        .from(creditHolds)
        .where(eq(creditHolds.userId, userId))
        .orderBy(desc(creditHolds.id))
        .limit(limit)
        .offset(offset)
    },
  }
}
