import { inArray } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { laravelImportedUsers } from '../../db/schema/index.ts'

/** Reads laravel_imported_users: which user here each id of the Laravel original became. */
export function createImportedUsersRepository({ db }: { db: Db }) {
  return {
    /** The user ids here of these old ids (those imported), by old id: one query on the primary key. */
    async userIdsByOldIds(oldIds: number[]): Promise<Map<number, number>> {
      if (oldIds.length === 0) return new Map()
      const rows = await db
        .select({ oldId: laravelImportedUsers.oldId, userId: laravelImportedUsers.userId })
        .from(laravelImportedUsers)
        .where(inArray(laravelImportedUsers.oldId, oldIds))
      return new Map(rows.map((row) => [row.oldId, row.userId]))
    },
  }
}
