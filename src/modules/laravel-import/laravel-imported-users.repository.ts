import { and, eq, isNotNull } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import {
  type LaravelImportedUserRow,
  laravelImportedUsers,
  type UserRow,
  users,
} from '../../db/schema/index.ts'

export type NewLaravelImportedUser = typeof laravelImportedUsers.$inferInsert

export function createLaravelImportedUsersRepository({ db }: { db: Db }) {
  return {
    async insert(row: NewLaravelImportedUser): Promise<void> {
      await db.insert(laravelImportedUsers).values(row)
    },

    /** The user imported with the original's id `oldId`, and their user row, in one query. */
    async findWithUser(
      oldId: number,
    ): Promise<{ imported: LaravelImportedUserRow; user: UserRow } | undefined> {
      const [row] = await db
        .select({ imported: laravelImportedUsers, user: users })
        .from(laravelImportedUsers)
        .innerJoin(users, eq(users.id, laravelImportedUsers.userId))
        .where(eq(laravelImportedUsers.oldId, oldId))
        .limit(1)
      return row
    },

    /** Forgets the original's remember token and password hash of a user (their password changed). */
    async forgetCredentials(userId: number): Promise<void> {
      await db
        .update(laravelImportedUsers)
        .set({ rememberTokenDigest: null, legacyPasswordHash: null })
        .where(eq(laravelImportedUsers.userId, userId))
    },

    /** Forgets the original's remember token of a user, as Laravel's logout cycles it. */
    async forgetRememberToken(userId: number): Promise<void> {
      await db
        .update(laravelImportedUsers)
        .set({ rememberTokenDigest: null })
        .where(
          and(eq(laravelImportedUsers.userId, userId), isNotNull(laravelImportedUsers.rememberTokenDigest)),
        )
    },
  }
}
