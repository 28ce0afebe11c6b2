import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import type { EventBus } from '../../lib/events.ts'
import { hashPassword, verifyLoginPassword, verifyPassword } from '../../lib/passwords.ts'
import type { ServiceEvents } from '../../plugins/events.ts'
import { createUsersRepository } from './users.repository.ts'

export type NewUser = {
  name: string
  email: string
  isAdmin?: boolean
  verified?: boolean
} & (
  | { password: string }
  /** A hash made beforehand with `hashPassword`: many users with one password cost one hash. */
  | { passwordHash: string }
)

/**
 * A user brought from another system (the Laravel original) as it was there: its password hash, its
 * dates, its two-factor columns (already sealed under this APP_KEY) and its stored photo path.
 */
export interface ImportedUser {
  name: string
  email: string
  passwordHash: string
  isAdmin: boolean
  emailVerifiedAt: Date | null
  twoFactorSecret: string | null
  twoFactorRecoveryCodes: string | null
  twoFactorConfirmedAt: Date | null
  profilePhotoPath: string | null
  createdAt: Date
  updatedAt: Date
}

/** The users columns two-factor authentication owns. */
export type TwoFactorColumns = Partial<
  Pick<UserRow, 'twoFactorSecret' | 'twoFactorRecoveryCodes' | 'twoFactorConfirmedAt' | 'twoFactorLastStep'>
>

/** What a profile update may change; an undefined field is left as it is. */
export interface ProfileChanges {
  name: string
  email: string
  phone?: string | null
  timezone?: string | null
  country?: string | null
}

const emailTaken = () => ValidationError.withMessages({ email: ['The email has already been taken.'] })

export interface UsersDeps {
  db: Db
  clock: Clock
  events: EventBus<ServiceEvents>
  /**
   * In a password change's transaction, before the new hash is written: what another domain let in
   * on the old password forgets it (the Laravel original's remember cookies). Not for the rehash of
   * the same password at sign-in.
   */
  passwordReplaced?: (tx: Db, userId: number) => Promise<void>
}

/** The users service; `within(tx)` is the same service inside the caller's transaction. */
export function createUsersService(deps: UsersDeps) {
  return { ...usersOver(deps), within: (tx: Db) => usersOver({ ...deps, db: tx }) }
}

function usersOver({ db, clock, events, passwordReplaced }: UsersDeps) {
  const repo = createUsersRepository({ db, events })
  // A new password, whoever sets it. Forgetting first: outside a transaction, a failure between the
  // two writes leaves the old password with nothing trusting it, never the new one beside a stale trust.
  const replacePassword = async (userId: number, hash: string) => {
    await passwordReplaced?.(db, userId)
    return repo.updatePasswordHash(userId, hash, clock.now())
  }
  return {
    findById: (id: number) => repo.findById(id),
    findByEmail: (email: string) => repo.findByEmail(email.trim()),
    /** The ids of the users with these emails, in any case, keyed by the email lower-cased. */
    idsByEmails: (emails: string[]) =>
      repo.idsByLowerEmails([...new Set(emails.map((email) => email.trim().toLowerCase()))]),

    /** Marks the email verified now (once: a second verification keeps the first time). */
    async markEmailVerified(user: UserRow): Promise<UserRow> {
      if (user.emailVerifiedAt) return user
      return (await repo.update(user.id, { emailVerifiedAt: clock.now(), updatedAt: clock.now() })) ?? user
    },

    /**
     * Fortify's password confirmation for a signed-in user's sensitive change: a wrong password is a
     * 422 on `field` ("The password is incorrect.", Laravel's `current_password` rule, unless told otherwise).
     */
    async confirmPassword(
      user: UserRow,
      password: unknown,
      field = 'password',
      message = 'The password is incorrect.',
    ): Promise<void> {
      const valid = typeof password === 'string' && (await verifyPassword(user.password, password)).valid
      if (!valid) throw ValidationError.withMessages({ [field]: [message] })
    },

    /** Replaces the password with an argon2id hash of `plain` (password reset, password update). */
    async setPassword(user: UserRow, plain: string): Promise<void> {
      await replacePassword(user.id, await hashPassword(plain))
    },

    /**
     * Stores a hash made beforehand with `hashPassword`, so a transaction around this write need not
     * stay open while the hash is computed. Answers the updated user (undefined when gone).
     */
    setPasswordHash: (user: UserRow, hash: string) => replacePassword(user.id, hash),

    /**
     * Fortify's UpdateUserProfileInformation: a changed email (any case) is unverified again; one
     * another user has is a 422 on `email`. With `pendingEmail`, a changed email is only stored as
     * pending instead (the account keeps its address until the new one is verified). Undefined fields
     * stay as they are; undefined when the user is gone.
     */
    async updateProfile(
      user: UserRow,
      changes: ProfileChanges,
      { pendingEmail = false }: { pendingEmail?: boolean } = {},
    ): Promise<UserRow | undefined> {
      const email = changes.email.trim().toLowerCase()
      const emailChanged = email !== user.email.toLowerCase()
      if (emailChanged) {
        const holder = await repo.findByEmail(email)
        if (holder && holder.id !== user.id) throw emailTaken()
      }
      const emailColumns = !emailChanged
        ? { email }
        : pendingEmail
          ? { pendingEmail: email }
          : { email, emailVerifiedAt: null, pendingEmail: null }
      const row = await repo.updateUnlessEmailTaken(user.id, {
        name: changes.name.trim(),
        ...emailColumns,
        ...(changes.phone !== undefined ? { phone: changes.phone } : {}),
        ...(changes.timezone !== undefined ? { timezone: changes.timezone } : {}),
        ...(changes.country !== undefined ? { country: changes.country } : {}),
        updatedAt: clock.now(),
      })
      // Two users racing for one address: the unique index decides, the loser gets the same 422.
      if (row === 'email-taken') throw emailTaken()
      return row
    },

    /**
     * Makes the pending address (the one `user` was read with) the account's, verified now. Answers
     * undefined when it is no longer pending (replaced, or already switched); another account taking
     * the address meanwhile is a 422 on `email`.
     */
    async switchToPendingEmail(user: UserRow): Promise<UserRow | undefined> {
      if (!user.pendingEmail) return undefined
      const now = clock.now()
      const row = await repo.switchToPendingEmail(user.id, user.pendingEmail, now)
      if (row === 'email-taken') throw emailTaken()
      return row
    },

    /** Sets (or clears) the profile photo path; answers the user and the path it replaced (undefined: no user). */
    swapProfilePhoto: (userId: number, path: string | null) =>
      repo.swapProfilePhotoPath(userId, path, clock.now()),

    /**
     * Deletes the account and, by foreign key, its sessions and data, and its password reset token;
     * answers the deleted row.
     */
    delete: (user: UserRow) => repo.delete(user.id),

    /** Makes the user an admin or a plain user; answers the updated row (undefined when gone). */
    setAdmin: (user: UserRow, isAdmin: boolean) => repo.update(user.id, { isAdmin, updatedAt: clock.now() }),

    /**
     * Blocks or unblocks the user at `now` (blocked_at and updated_at the same instant); answers the
     * updated row (undefined when gone).
     */
    setBlocked: (user: UserRow, blocked: boolean, now: Date) =>
      repo.update(user.id, { blockedAt: blocked ? now : null, updatedAt: now }),

    /** Locks the rows of the admins who can sign in, in the caller's transaction; answers their ids. */
    lockActiveAdmins: () => repo.lockActiveAdmins(),

    /** Writes the two-factor columns (secret, recovery codes, confirmation, last step) together. */
    async updateTwoFactor(user: UserRow, values: TwoFactorColumns): Promise<UserRow> {
      return (await repo.update(user.id, { ...values, updatedAt: clock.now() })) ?? user
    },

    /** Up to `limit` users holding 2FA data, by id, after `afterId` (for sweeps over every account). */
    withTwoFactorData: (afterId: number, limit: number) => repo.withTwoFactorData(afterId, limit),

    /** Writes the two-factor columns unless someone changed the secret or codes since `user` was read. */
    updateTwoFactorIfUnchanged: (user: UserRow, values: TwoFactorColumns) =>
      repo.updateTwoFactorIfUnchanged(user.id, user, { ...values, updatedAt: clock.now() }),

    /** Marks a TOTP time step used; false when it (or a later one) already was: no code works twice. */
    claimTwoFactorStep: (userId: number, step: number) => repo.claimTwoFactorStep(userId, step),

    /** Swaps the stored recovery codes if nobody changed them meanwhile; false when someone did. */
    replaceRecoveryCodes: (userId: number, expected: string, next: string) =>
      repo.replaceRecoveryCodes(userId, expected, next, clock.now()),

    /**
     * Creates a user with an argon2id hash; a taken email (any case) is a 422 on `email`. With
     * `andThen`, the insert and what it does (queue the mail the sign-up causes) share one
     * transaction, begun once the hash is computed.
     */
    async create(input: NewUser, andThen?: (user: UserRow, tx: Db) => Promise<unknown>): Promise<UserRow> {
      const email = input.email.trim().toLowerCase()
      if (await repo.findByEmail(email)) throw emailTaken()
      const password = 'passwordHash' in input ? input.passwordHash : await hashPassword(input.password)
      const now = clock.now()
      const values = {
        name: input.name.trim(),
        email,
        password,
        isAdmin: input.isAdmin ?? false,
        emailVerifiedAt: input.verified ? now : null,
        createdAt: now,
        updatedAt: now,
      }
      const row = andThen
        ? await db.transaction(async (tx) => {
            const inserted = await createUsersRepository({ db: tx, events }).insert(values)
            if (inserted) await andThen(inserted, tx)
            return inserted
          })
        : await repo.insert(values)
      // Two registrations racing for one email: the unique index decides, the loser gets the same 422.
      if (!row) throw emailTaken()
      return row
    },

    /**
     * Inserts users brought from another system, with the rules of `create` (name trimmed, email
     * trimmed and lower-cased) and their own hash and dates; an email an account already has (any
     * case) is left out. Answers the inserted users' ids and (stored) emails.
     */
    importMany(inputs: ImportedUser[]): Promise<Array<{ id: number; email: string }>> {
      if (inputs.length === 0) return Promise.resolve([])
      return repo.insertMany(
        inputs.map(({ passwordHash, ...input }) => ({
          ...input,
          name: input.name.trim(),
          email: input.email.trim().toLowerCase(),
          password: passwordHash,
        })),
      )
    },

    /** Of these emails, those an account has (any case), lower-cased. */
    takenEmails: (emails: string[]) => repo.takenEmails(emails.map((email) => email.trim())),

    /**
     * The user whose email and password these are, or undefined. Every attempt does the same queries
     * and the same hashing work (see verifyLoginPassword), so an unknown email, an argon2id account
     * and one imported with a bcrypt hash answer a wrong password in the same time. A bcrypt hash is
     * replaced by argon2id on success (the user answered carries the new hash): the same password,
     * so not a password change (`passwordReplaced` is not called).
     */
    async verifyCredentials(email: string, password: string): Promise<UserRow | undefined> {
      const user = await repo.findByEmail(email.trim())
      const importedCost = await repo.highestBcryptCost()
      const { valid, needsRehash } = await verifyLoginPassword(user?.password, password, importedCost)
      if (!user || !valid) return undefined
      if (!needsRehash) return user
      return (await repo.updatePasswordHash(user.id, await hashPassword(password), clock.now())) ?? user
    },
  }
}

export type UsersService = ReturnType<typeof createUsersService>
