import { and, asc, desc, eq, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { type ChatJoinRequestRow, chatJoinRequests, users } from '../../../db/schema/index.ts'

/** Requests to join private groups: every query of them. */
export function createJoinRequestsRepository({ db }: { db: Db }) {
  return {
    async find(id: number, { lock = false } = {}): Promise<ChatJoinRequestRow | undefined> {
      const query = db.select().from(chatJoinRequests).where(eq(chatJoinRequests.id, id)).limit(1)
      const [row] = lock ? await query.for('update') : await query
      return row
    },

    /** The user's pending request to the group, filing one when there is none (one per user and group). */
    async pendingOrNew(groupId: number, userId: number, now: Date): Promise<ChatJoinRequestRow> {
      const [created] = await db
        .insert(chatJoinRequests)
        .values({ groupId, userId, status: 'pending', createdAt: now })
        .onConflictDoNothing()
        .returning()
      if (created) return created
      const [pending] = await db
        .select()
        .from(chatJoinRequests)
        .where(
          and(
            eq(chatJoinRequests.groupId, groupId),
            eq(chatJoinRequests.userId, userId),
            eq(chatJoinRequests.status, 'pending'),
          ),
        )
        .limit(1)
      if (!pending) throw new Error('pending join request vanished')
      return pending
    },

    /** The user's latest request to the group: the pending one if any, else the last answered. */
    async latest(groupId: number, userId: number): Promise<ChatJoinRequestRow | undefined> {
      const [row] = await db
        .select()
        .from(chatJoinRequests)
        .where(and(eq(chatJoinRequests.groupId, groupId), eq(chatJoinRequests.userId, userId)))
        .orderBy(sql`${chatJoinRequests.status} = 'pending' desc`, desc(chatJoinRequests.id))
        .limit(1)
      return row
    },

    /** The pending requests of a group with who asked, oldest first (what its owner has to answer). */
    pendingOf(groupId: number) {
      return db
        .select({
          id: chatJoinRequests.id,
          createdAt: chatJoinRequests.createdAt,
          user: { id: users.id, name: users.name, profilePhotoPath: users.profilePhotoPath },
        })
        .from(chatJoinRequests)
        .innerJoin(users, eq(users.id, chatJoinRequests.userId))
        .where(and(eq(chatJoinRequests.groupId, groupId), eq(chatJoinRequests.status, 'pending')))
        .orderBy(asc(chatJoinRequests.id))
    },

    async answer(
      id: number,
      status: 'approved' | 'declined',
      respondedBy: number | null,
      now: Date,
    ): Promise<ChatJoinRequestRow> {
      const [row] = await db
        .update(chatJoinRequests)
        .set({ status, respondedBy, respondedAt: now })
        .where(eq(chatJoinRequests.id, id))
        .returning()
      if (!row) throw new Error('join request vanished')
      return row
    },

    /** Marks the user's pending request approved (they joined another way, e.g. by invitation). */
    async approvePendingOf(groupId: number, userId: number, now: Date): Promise<void> {
      await db
        .update(chatJoinRequests)
        .set({ status: 'approved', respondedAt: now })
        .where(
          and(
            eq(chatJoinRequests.groupId, groupId),
            eq(chatJoinRequests.userId, userId),
            eq(chatJoinRequests.status, 'pending'),
          ),
        )
    },
  }
}

export type JoinRequestsRepository = ReturnType<typeof createJoinRequestsRepository>
