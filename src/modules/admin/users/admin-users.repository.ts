import { and, desc, eq, ilike, isNotNull, isNull, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { type UserRow, users } from '../../../db/schema/index.ts'

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

    async findForUpdate(id: number): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(eq(users.id, id)).for('update')
      return row
    },
  }
}

export type AdminUsersRepository = ReturnType<typeof createAdminUsersRepository>
