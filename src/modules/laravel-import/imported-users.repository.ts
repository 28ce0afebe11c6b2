import { and, eq, isNotNull, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import {
  type LaravelImportedUserRow,
  laravelImportedUsers,
  type UserRow,
  users,
} from '../../db/schema/index.ts'

// Any fixed number: two user imports running at once take turns, batch by batch.
const IMPORT_LOCK = 727_039

export interface ImportedUserLink {
  oldId: number
  userId: number
  rememberTokenDigest: string | null
  legacyPasswordHash: string | null
}

/** laravel_imported_users: which user here each id of the Laravel original became. */
export function createImportedUsersRepository({ db }: { db: Db }) {
  return {
    /** Takes the user import's lock until the caller's transaction ends. */
    async lock(): Promise<void> {
      await db.execute(sql`select pg_advisory_xact_lock(${IMPORT_LOCK})`)
    },

    /** The user ids here of these old ids (those imported), by old id: one query on the primary key. */
    async userIdsByOldIds(oldIds: number[]): Promise<Map<number, number>> {
      if (oldIds.length === 0) return new Map()
      // One array parameter for the batch (ids are integers: the array's text is safe to build).
      const ids = `{${oldIds.map((id) => Math.trunc(id)).join(',')}}`
      const rows = await db
        .select({ oldId: laravelImportedUsers.oldId, userId: laravelImportedUsers.userId })
        .from(laravelImportedUsers)
        .where(sql`${laravelImportedUsers.oldId} = any(${ids}::bigint[])`)
      return new Map(rows.map((row) => [row.oldId, row.userId]))
    },

    /** Records users as imported, in one statement whatever the batch's size. */
    async insert(links: ImportedUserLink[]): Promise<void> {
      if (links.length === 0) return
      const rows = links.map((link) => ({
        old_id: link.oldId,
        user_id: link.userId,
        remember_token_digest: link.rememberTokenDigest,
        legacy_password_hash: link.legacyPasswordHash,
      }))
      const columns = sql.raw('old_id, user_id, remember_token_digest, legacy_password_hash')
      await db.execute(
        sql`insert into ${laravelImportedUsers} (${columns}) select ${columns} from json_populate_recordset(null::laravel_imported_users, ${JSON.stringify(rows)}::json)`,
      )
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
