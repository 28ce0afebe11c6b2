import { and, desc, eq, gte, inArray, lt, ne, or, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { type SessionPayload, type SessionRow, sessions, type UserRow, users } from '../../db/schema/index.ts'

/** The oldest last activity and the oldest start (unix seconds) a live session may have. */
export interface LiveSince {
  lastActivity: number
  createdAt: number
}

/**
 * The per-request read, prepared by name: PostgreSQL plans it once per connection, and drizzle
 * builds its SQL (both tables' every column) once per repository rather than on every request.
 */
const findWithUserStatement = (db: Db) =>
  db
    .select({ session: sessions, user: users })
    .from(sessions)
    .leftJoin(users, eq(users.id, sessions.userId))
    .where(eq(sessions.id, sql.placeholder('id')))
    .limit(1)
    .prepare('session_find_with_user')

/** A session active since `live.lastActivity` and begun since `live.createdAt`. */
const liveSince = (live: LiveSince) =>
  and(gte(sessions.lastActivity, live.lastActivity), gte(sessions.createdAt, live.createdAt))

export function createSessionsRepository({ db }: { db: Db }) {
  let findWithUser: ReturnType<typeof findWithUserStatement> | undefined
  return {
    async insert(row: SessionRow): Promise<void> {
      await db.insert(sessions).values(row)
    },

    /** Inserts sessions, leaving out those whose id exists; answers how many were inserted. */
    async insertMissing(rows: SessionRow[]): Promise<number> {
      if (rows.length === 0) return 0
      const inserted = await db
        .insert(sessions)
        .values(rows)
        .onConflictDoNothing()
        .returning({ id: sessions.id })
      return inserted.length
    },

    /** The session row and its user's (null for a guest session) in one query: the per-request read. */
    async findWithUser(id: string): Promise<{ session: SessionRow; user: UserRow | null } | undefined> {
      findWithUser ??= findWithUserStatement(db)
      const [row] = await findWithUser.execute({ id })
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

    /** A user's sessions active since `live.lastActivity` and begun since `live.createdAt`, the most recently active first. */
    async findForUser(userId: number, live: LiveSince): Promise<SessionRow[]> {
      return db
        .select()
        .from(sessions)
        .where(and(eq(sessions.userId, userId), liveSince(live)))
        .orderBy(desc(sessions.lastActivity))
    },

    /** Which of these sessions exist and are live (active since `live.lastActivity`, begun since `live.createdAt`). */
    async findLiveIds(ids: string[], live: LiveSince): Promise<string[]> {
      if (ids.length === 0) return []
      const rows = await db
        .select({ id: sessions.id })
        .from(sessions)
        .where(and(inArray(sessions.id, ids), liveSince(live)))
      return rows.map((row) => row.id)
    },

    /** Deletes the sessions last active before `live.lastActivity` or begun before `live.createdAt`. */
    async deleteExpired(live: LiveSince): Promise<void> {
      await db
        .delete(sessions)
        .where(or(lt(sessions.lastActivity, live.lastActivity), lt(sessions.createdAt, live.createdAt)))
    },
  }
}
