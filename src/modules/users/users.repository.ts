import { and, eq, gt, inArray, isNotNull, isNull, lt, or, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { isUniqueViolation } from '../../db/failures.ts'
import { BCRYPT_COST, IS_BCRYPT, type NewUserRow, type UserRow, users } from '../../db/schema/index.ts'
import type { EventBus } from '../../lib/events.ts'
import type { ServiceEvents } from '../../plugins/events.ts'

/** The columns a user brought from another system is inserted with (the rest take their defaults). */
const IMPORTED_COLUMNS = [
  'name',
  'email',
  'password',
  'isAdmin',
  'emailVerifiedAt',
  'twoFactorSecret',
  'twoFactorRecoveryCodes',
  'twoFactorConfirmedAt',
  'profilePhotoPath',
  'createdAt',
  'updatedAt',
] as const satisfies ReadonlyArray<keyof NewUserRow>

export type ImportedUserRow = Pick<NewUserRow, (typeof IMPORTED_COLUMNS)[number]>

/**
 * The one writer of the users table. Every write announces `UserChanged`, so whatever keeps users
 * in memory (the session plugin's short cache) forgets them; inside a transaction that is before
 * the commit, which listeners allow for.
 */
export function createUsersRepository({ db, events }: { db: Db; events: EventBus<ServiceEvents> }) {
  const changed = (userId: number) => events.emit('UserChanged', { userId })
  return {
    async findById(id: number): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(eq(users.id, id)).limit(1)
      return row
    },

    async findByEmail(email: string): Promise<UserRow | undefined> {
      const [row] = await db.select().from(users).where(sql`lower(${users.email}) = lower(${email})`).limit(1)
      return row
    },

    /** The ids of the users with these emails (lower-cased), by lower-cased email: one query on the unique index. */
    async idsByLowerEmails(emails: string[]): Promise<Map<string, number>> {
      if (emails.length === 0) return new Map()
      const lower = sql<string>`lower(${users.email})`
      const rows = await db.select({ id: users.id, email: lower }).from(users).where(inArray(lower, emails))
      return new Map(rows.map((row) => [row.email, row.id]))
    },

    /**
     * Inserts a user; answers undefined when the email is taken. ON CONFLICT rather than a caught
     * error, so a clash leaves the caller's transaction usable.
     */
    async insert(values: NewUserRow): Promise<UserRow | undefined> {
      const [row] = await db.insert(users).values(values).onConflictDoNothing().returning()
      return row
    },

    /**
     * Inserts many users in one statement, their rows handed over as one JSON parameter (a batch of
     * hundreds is one parameter, not thousands); those whose email is taken are left out. Answers
     * the inserted users' ids and emails.
     */
    async insertMany(values: ImportedUserRow[]): Promise<Array<{ id: number; email: string }>> {
      if (values.length === 0) return []
      const rows = values.map((value) =>
        Object.fromEntries(IMPORTED_COLUMNS.map((key) => [users[key].name, value[key] ?? null])),
      )
      const columns = sql.raw(IMPORTED_COLUMNS.map((key) => `"${users[key].name}"`).join(', '))
      const result = await db.execute(
        sql`insert into ${users} (${columns}) select ${columns} from json_populate_recordset(null::users, ${JSON.stringify(rows)}::json) on conflict do nothing returning id, email`,
      )
      // Both drivers answer { rows }; a bigint id may arrive as text.
      return (result as unknown as { rows: Array<{ id: number | string; email: string }> }).rows.map(
        (row) => ({
          id: Number(row.id),
          email: row.email,
        }),
      )
    },

    /** Of these emails, those a user has (any case), lower-cased. */
    async takenEmails(emails: string[]): Promise<Set<string>> {
      if (emails.length === 0) return new Set()
      const lowered = [...new Set(emails.map((email) => email.toLowerCase()))]
      const rows = await db
        .select({ email: sql<string>`lower(${users.email})` })
        .from(users)
        .where(
          sql`lower(${users.email}) in (select json_array_elements_text(${JSON.stringify(lowered)}::json))`,
        )
      return new Set(rows.map((row) => row.email))
    },

    /**
     * The highest cost among the bcrypt hashes imported from the Laravel original and not yet
     * rehashed, or null when none is left (read from the partial index users_bcrypt_cost_index).
     */
    async highestBcryptCost(): Promise<number | null> {
      const [row] = await db
        .select({ cost: sql<string | null>`max(${BCRYPT_COST})` })
        .from(users)
        .where(IS_BCRYPT)
      const cost = Number(row?.cost)
      return row?.cost && Number.isInteger(cost) ? cost : null
    },

    /** Changes the given columns; answers the updated row (undefined when the user is gone). */
    async update(id: number, values: Partial<NewUserRow>): Promise<UserRow | undefined> {
      const [row] = await db.update(users).set(values).where(eq(users.id, id)).returning()
      changed(id)
      return row
    },

    /**
     * Records a TOTP time step as used, only when it is later than the last one used: answers false
     * when it was not, so two requests racing with one code cannot both pass.
     */
    async claimTwoFactorStep(id: number, step: number): Promise<boolean> {
      const rows = await db
        .update(users)
        .set({ twoFactorLastStep: step })
        .where(and(eq(users.id, id), or(isNull(users.twoFactorLastStep), lt(users.twoFactorLastStep, step))))
        .returning({ id: users.id })
      if (rows.length > 0) changed(id)
      return rows.length > 0
    },

    /** Replaces the recovery codes only if they are still `expected` (compare-and-set: each code works once). */
    async replaceRecoveryCodes(id: number, expected: string, next: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(users)
        .set({ twoFactorRecoveryCodes: next, updatedAt: now })
        .where(and(eq(users.id, id), eq(users.twoFactorRecoveryCodes, expected)))
        .returning({ id: users.id })
      if (rows.length > 0) changed(id)
      return rows.length > 0
    },

    /** Up to `limit` users holding a 2FA secret or recovery codes, by id, after `afterId`. */
    withTwoFactorData(afterId: number, limit: number): Promise<UserRow[]> {
      return db
        .select()
        .from(users)
        .where(
          and(
            gt(users.id, afterId),
            or(isNotNull(users.twoFactorSecret), isNotNull(users.twoFactorRecoveryCodes)),
          ),
        )
        .orderBy(users.id)
        .limit(limit)
    },

    /**
     * Writes 2FA columns only while the secret and codes are still `expected` (compare-and-set), so a
     * user enrolling meanwhile keeps what they just set up; answers whether it wrote.
     */
    async updateTwoFactorIfUnchanged(
      id: number,
      expected: Pick<UserRow, 'twoFactorSecret' | 'twoFactorRecoveryCodes'>,
      values: Partial<NewUserRow>,
    ): Promise<boolean> {
      const same = (
        column: typeof users.twoFactorSecret | typeof users.twoFactorRecoveryCodes,
        value: string | null,
      ) => (value === null ? isNull(column) : eq(column, value))
      const rows = await db
        .update(users)
        .set(values)
        .where(
          and(
            eq(users.id, id),
            same(users.twoFactorSecret, expected.twoFactorSecret),
            same(users.twoFactorRecoveryCodes, expected.twoFactorRecoveryCodes),
          ),
        )
        .returning({ id: users.id })
      if (rows.length > 0) changed(id)
      return rows.length > 0
    },

    /** Like `update`, but answers 'email-taken' when the new email clashes with another user's (any case). */
    async updateUnlessEmailTaken(
      id: number,
      values: Partial<NewUserRow>,
    ): Promise<UserRow | 'email-taken' | undefined> {
      try {
        const [row] = await db.update(users).set(values).where(eq(users.id, id)).returning()
        changed(id)
        return row
      } catch (error) {
        if (isUniqueViolation(error)) return 'email-taken'
        throw error
      }
    },

    /**
     * Makes `pending` the user's email, verified at `now`, if it is still their pending one (compare-
     * and-set: a link for a replaced address does nothing); 'email-taken' when another user has it.
     */
    async switchToPendingEmail(
      id: number,
      pending: string,
      now: Date,
    ): Promise<UserRow | 'email-taken' | undefined> {
      try {
        const [row] = await db
          .update(users)
          .set({ email: pending, pendingEmail: null, emailVerifiedAt: now, updatedAt: now })
          .where(and(eq(users.id, id), eq(users.pendingEmail, pending)))
          .returning()
        if (row) changed(id)
        return row
      } catch (error) {
        if (isUniqueViolation(error)) return 'email-taken'
        throw error
      }
    },

    /**
     * Sets the profile photo path and answers the one it replaces, under a row lock so two uploads
     * racing cannot both see the same old file (and leave one new file orphaned).
     */
    async swapProfilePhotoPath(
      id: number,
      path: string | null,
      now: Date,
    ): Promise<{ user: UserRow; previous: string | null } | undefined> {
      const swapped = await db.transaction(async (tx) => {
        const [current] = await tx
          .select({ path: users.profilePhotoPath })
          .from(users)
          .where(eq(users.id, id))
          .for('update')
        if (!current) return undefined
        const [user] = await tx
          .update(users)
          .set({ profilePhotoPath: path, updatedAt: now })
          .where(eq(users.id, id))
          .returning()
        return user && { user, previous: current.path }
      })
      changed(id)
      return swapped
    },

    /** Deletes the user (sessions and user data go with it, by foreign key); answers the deleted row. */
    async delete(id: number): Promise<UserRow | undefined> {
      const [row] = await db.delete(users).where(eq(users.id, id)).returning()
      changed(id)
      return row
    },

    /**
     * Locks the rows of every admin who can sign in (not blocked) and answers their ids. Every admin
     * change (and an admin deleting their own account) takes this lock first, in id order, so two
     * admins demoting, blocking or deleting each other at once take turns and the second sees the
     * first's result.
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

    /** Replaces the password hash; answers the updated row (undefined when the user is gone). */
    async updatePasswordHash(id: number, password: string, now: Date): Promise<UserRow | undefined> {
      const [row] = await db
        .update(users)
        .set({ password, updatedAt: now })
        .where(eq(users.id, id))
        .returning()
      changed(id)
      return row
    },
  }
}

export type UsersRepository = ReturnType<typeof createUsersRepository>
