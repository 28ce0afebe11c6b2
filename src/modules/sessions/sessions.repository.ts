import { and, desc, eq, gte, lt, ne, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { type SessionPayload, type SessionRow, sessions, type UserRow, users } from '../../db/schema/index.ts'

export function createSessionsRepository({ db }: { db: Db }) {
  return {
    async insert(row: SessionRow): Promise<void> {
      await db.insert(sessions).values(row)
    },

    /** The session row and its user's (null for a guest session) in one query: the per-request read. */
    async findWithUser(id: string): Promise<{ session: SessionRow; user: UserRow | null } | undefined> {
      const [row] = await db
        .select({ session: sessions, user: users })
        .from(sessions)
        .leftJoin(users, eq(users.id, sessions.userId))
        .where(eq(sessions.id, id))
        .limit(1)
      return row
    },

    /** Merges `changes` into the stored payload (jsonb `||`), leaving its other keys as they are. */
    async mergePayload(id: string, changes: Partial<SessionPayload>): Promise<void> {
      await db
        .update(sessions)
        .set({ payload: sql`${sessions.payload} || ${JSON.stringify(changes)}::jsonb` })
        .where(eq(sessions.id, id))
    },

    async touch(id: string, lastActivity: number): Promise<void> {
      await db.update(sessions).set({ lastActivity }).where(eq(sessions.id, id))
    },

    async delete(id: string): Promise<void> {
      await db.delete(sessions).where(eq(sessions.id, id))
    },

    /** Ends every session of a user, but the one named in `exceptId`. */
    async deleteForUser(userId: number, exceptId?: string): Promise<void> {
      const mine = eq(sessions.userId, userId)
      await db.delete(sessions).where(exceptId ? and(mine, ne(sessions.id, exceptId)) : mine)
    },

    /** A user's sessions active since `lastActivity`, the most recently active first. */
    async findForUser(userId: number, lastActivity: number): Promise<SessionRow[]> {
      return db
        .select()
        .from(sessions)
        .where(and(eq(sessions.userId, userId), gte(sessions.lastActivity, lastActivity)))
        .orderBy(desc(sessions.lastActivity))
    },

    async deleteIdleSince(lastActivity: number): Promise<void> {
      await db.delete(sessions).where(lt(sessions.lastActivity, lastActivity))
    },
  }
}
