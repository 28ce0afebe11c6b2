import { eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { type NewUserRow, type UserRow, users } from '../../db/schema/index.ts'

const UNIQUE_VIOLATION = '23505'

/** Postgres reports a unique-key clash as SQLSTATE 23505, on the error or its cause (drizzle wraps it). */
export function isUniqueViolation(error: unknown): boolean {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code === UNIQUE_VIOLATION) return true
  }
  return false
}

export function createUsersRepository({ db }: { db: Db }) {
  return {
    async findById(id: number): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1)
      return row
    },

    async findByEmail(email: string): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(sql`lower(${users.email}) = lower(${email})`).limit(1)
      return row
    },

    /** Inserts a user; answers undefined when the email is taken. */
    async insert(values: NewUserRow): Promise<UserRow | undefined> {
      try {
        const [row] = await db.insert(users).values(values).returning()
        return row
      } catch (error) {
        if (isUniqueViolation(error)) return undefined
        throw error
      }
    },

    async updatePasswordHash(id: number, password: string, now: Date): Promise<void> {
      await db.update(users).set({ password, updatedAt: now }).where(eq(users.id, id))
    },
  }
}

export type UsersRepository = ReturnType<typeof createUsersRepository>
