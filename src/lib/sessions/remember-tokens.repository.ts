import { and, desc, eq, gt, inArray, lte, ne } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { type RememberTokenRow, rememberTokens, type UserRow, users } from '../../db/schema/index.ts'

export function createRememberTokensRepository({ db }: { db: Db }) {
  return {
    async insert(row: RememberTokenRow): Promise<void> {
      await db.insert(rememberTokens).values(row)
    },

    /** The token unexpired at `now` and its user, in one query; its last use is set to `now`. */
    async use(id: string, now: number): Promise<{ token: RememberTokenRow; user: UserRow } | undefined> {
      const [token] = await db
        .update(rememberTokens)
        .set({ lastUsedAt: now })
        .where(and(eq(rememberTokens.id, id), gt(rememberTokens.expiresAt, now)))
        .returning()
      if (!token) return undefined
      const [user] = await db.select().from(users).where(eq(users.id, token.userId)).limit(1)
      return user && { token, user }
    },

    async delete(ids: string[]): Promise<void> {
      if (ids.length > 0) await db.delete(rememberTokens).where(inArray(rememberTokens.id, ids))
    },

    /** Forgets every device of a user, but the one named in `exceptId`. */
    async deleteForUser(userId: number, exceptId?: string | null): Promise<void> {
      const mine = eq(rememberTokens.userId, userId)
      await db.delete(rememberTokens).where(exceptId ? and(mine, ne(rememberTokens.id, exceptId)) : mine)
    },

    /** A user's devices unexpired at `now`, the most recently used first. */
    async findForUser(userId: number, now: number): Promise<RememberTokenRow[]> {
      return db
        .select()
        .from(rememberTokens)
        .where(and(eq(rememberTokens.userId, userId), gt(rememberTokens.expiresAt, now)))
        .orderBy(desc(rememberTokens.lastUsedAt))
    },

    async deleteExpired(now: number): Promise<void> {
      await db.delete(rememberTokens).where(lte(rememberTokens.expiresAt, now))
    },
  }
}
