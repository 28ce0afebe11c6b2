import { and, eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { type UserDataKind, userData } from '../../db/schema/index.ts'

type Document = Record<string, unknown>

export function createUserDataRepository({ db }: { db: Db }) {
  return {
    async find(userId: number, kind: UserDataKind): Promise<Document | undefined> {
      const [row] = await db
        .select({ data: userData.data })
        .from(userData)
        .where(and(eq(userData.userId, userId), eq(userData.kind, kind)))
        .limit(1)
      return row?.data
    },

    /** Inserts or replaces the user's document of this kind; answers it as stored. */
    async replace(userId: number, kind: UserDataKind, data: Document, now: Date): Promise<Document> {
      const [row] = await db
        .insert(userData)
        .values({ userId, kind, data, updatedAt: now })
        .onConflictDoUpdate({
          target: [userData.userId, userData.kind],
          set: { data: sql`excluded.data`, updatedAt: sql`excluded.updated_at` },
        })
        .returning({ data: userData.data })
      if (!row) throw new Error('user_data upsert returned no row')
      return row.data
    },
  }
}
