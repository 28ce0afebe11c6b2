import { and, desc, eq, ilike, isNotNull, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { type UserRow, users } from '../../../db/schema/index.ts'
import { announceUserChanged } from '../../../lib/user-changes.ts'

export interface UserFilters {
  q?: string
  role?: 'user' | 'admin'
  blocked?: boolean
}

// LIKE treats % and _ (and the escape character itself) as wildcards: matched literally here.
const likeContaining = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

function whereOf(filters: UserFilters): SQL | undefined {
  const conditions: (SQL | undefined)[] = []
  if (filters.q) {
    const pattern = likeContaining(filters.q)
    conditions.push(or(ilike(users.name, pattern), ilike(users.email, pattern)))
  }
  if (filters.role) conditions.push(eq(users.isAdmin, filters.role === 'admin'))
  if (filters.blocked !== undefined) {
    conditions.push(filters.blocked ? isNotNull(users.blockedAt) : isNull(users.blockedAt))
  }
  return and(...conditions)
}

/** The admin views of the users table: filtered pages, and the locks the admin rules need. */
export function createAdminUsersRepository({ db }: { db: Db }) {
  return {
    async count(filters: UserFilters): Promise<number> {
      const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(users).where(whereOf(filters))
      return row?.n ?? 0
    },

    /** One page, newest first (the id breaks ties between users created in the same instant). */
    page(filters: UserFilters, limit: number, offset: number): Promise<UserRow[]> {
      return db
        .select()
        .from(users)
        .where(whereOf(filters))
        .orderBy(desc(users.createdAt), desc(users.id))
        .limit(limit)
        .offset(offset)
    },

    /**
     * Locks the rows of every admin who can sign in (not blocked) and answers their ids. Every admin
     * change takes this lock first, in id order, so two admins demoting, blocking or deleting each
     * other at once take turns and the second sees the first's result.
     */
    async lockActiveAdmins(): Promise<number[]> {
      const rows = await db
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.isAdmin, true), isNull(users.blockedAt)))
        .orderBy(users.id)
        .for('update')
      return rows.map((row) => row.id)
    },

    async findForUpdate(id: number): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(eq(users.id, id)).for('update')
      return row
    },

    async setAdmin(id: number, isAdmin: boolean, now: Date): Promise<UserRow | undefined> {
      const [row] = await db
        .update(users)
        .set({ isAdmin, updatedAt: now })
        .where(eq(users.id, id))
        .returning()
      announceUserChanged(id)
      return row
    },

    async setBlockedAt(id: number, blockedAt: Date | null, now: Date): Promise<UserRow | undefined> {
      const [row] = await db
        .update(users)
        .set({ blockedAt, updatedAt: now })
        .where(eq(users.id, id))
        .returning()
      announceUserChanged(id)
      return row
    },
  }
}

export type AdminUsersRepository = ReturnType<typeof createAdminUsersRepository>
