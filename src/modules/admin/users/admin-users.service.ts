import type { Db } from '../../../db/client.ts'
import type { UserRow } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { forbidden, HttpError, passwordConfirmationRequired, ValidationError } from '../../../lib/errors.ts'
import type { EventBus } from '../../../lib/events.ts'
import { type LengthAwarePage, paginate } from '../../../lib/laravel.ts'
import type { MailMessage } from '../../../lib/mail/message.ts'
import type { SessionRef } from '../../../lib/sessions/session-store.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'
import type { AccountDeletionService } from '../../users/account-deletion.service.ts'
import type { CreditSummary } from '../../users/users.presenters.ts'
import type { UsersService } from '../../users/users.service.ts'
import type { AdminAuditService, AuditActor } from '../audit/admin-audit.service.ts'
import {
  adminPasswordChangedMail,
  userBlockedUnblockedMail,
  userCreatedMail,
  userRoleChangedMail,
} from './admin-users.mails.ts'
import { presentAdminUser } from './admin-users.presenters.ts'
import { type AdminUsersRepository, createAdminUsersRepository } from './admin-users.repository.ts'
import {
  type AdminUserResponse,
  type CreateUserBody,
  DEFAULT_PER_PAGE,
  type ListUsersQuery,
  type UpdateUserBody,
} from './admin-users.schemas.ts'

export interface AdminUsersDeps {
  db: Db
  clock: Clock
  appUrl: string
  /** Queues a mail in the transaction of the change that causes it (written with it, or not at all). */
  queueMail(mail: MailMessage, tx: Db): void | Promise<void>
  /** The signed email-verification link for the user's current address. */
  verificationUrl(user: UserRow): string
  creditsOf(userId: number): Promise<CreditSummary>
  users: UsersService
  accountDeletion: AccountDeletionService
  events: EventBus<ServiceEvents>
  audit: AdminAuditService
}

/** Where an admin change comes from: the request's client address, and the audit reason if given. */
export interface AdminChangeOrigin {
  ipAddress: string | null
  reason?: string | null
}

/**
 * An edit's context: the session to keep when a new password signs the user out (the actor's own,
 * when editing themself), and whether this session confirmed its password recently (an email,
 * password or role change needs it).
 */
export interface AdminEditContext extends AdminChangeOrigin {
  kept: SessionRef | null
  passwordConfirmed: boolean
}

/** Laravel's ModelNotFoundException, as route model binding answers an unknown id. */
export const userNotFound = (id: number) =>
  new HttpError(404, `No query results for model [App\\Models\\User] ${id}`)

const lastAdmin = (field: string) =>
  ValidationError.withMessages({ [field]: ['The last administrator cannot be demoted.'] })

const passwordMismatch = () =>
  ValidationError.withMessages({ password: ['The password field confirmation does not match.'] })

// Laravel's `confirmed`: checked only when a confirmation (or, on update, a password) is sent.
function checkConfirmation(input: { password?: string; password_confirmation?: string }): void {
  if (input.password !== undefined && input.password_confirmation !== undefined) {
    if (input.password !== input.password_confirmation) throw passwordMismatch()
  }
}

interface Locked {
  tx: Db
  repo: AdminUsersRepository
  users: ReturnType<UsersService['within']>
  /** Ids of the admins who can sign in, their rows locked for this transaction. */
  admins: number[]
  /** The acting admin as the audit records name them. */
  auditActor: AuditActor
  reason: string | null
}

export function createAdminUsersService(deps: AdminUsersDeps) {
  const { db, clock, appUrl, queueMail, users, events, audit } = deps
  const repo = createAdminUsersRepository({ db })

  const present = async (user: UserRow): Promise<AdminUserResponse> =>
    presentAdminUser(user, { appUrl, credits: await deps.creditsOf(user.id) })

  /**
   * Runs an admin change in one transaction holding the active admins' row locks. The actor must
   * still be one of them: an admin demoted, blocked or deleted a moment ago by another admin can no
   * longer act, so two admins acting on each other at once cannot leave the service without one.
   */
  function asAdmin<T>(
    actor: UserRow,
    origin: AdminChangeOrigin,
    change: (locked: Locked) => Promise<T>,
  ): Promise<T> {
    return db.transaction(async (tx) => {
      const lockedUsers = users.within(tx)
      const admins = await lockedUsers.lockActiveAdmins()
      if (!admins.includes(actor.id)) throw forbidden()
      return change({
        tx,
        repo: createAdminUsersRepository({ db: tx }),
        users: lockedUsers,
        admins,
        auditActor: { id: actor.id, email: actor.email, ipAddress: origin.ipAddress },
        reason: origin.reason ?? null,
      })
    })
  }

  /** One audit record of an account change, in the change's transaction. */
  const recordChange = (
    locked: Locked,
    subject: UserRow,
    action: 'user.email' | 'user.password' | 'user.role' | 'user.block' | 'user.unblock' | 'user.delete',
    before: Record<string, unknown>,
    after: Record<string, unknown>,
  ) =>
    audit.record(locked.tx, locked.auditActor, {
      action,
      subjectUserId: subject.id,
      reason: locked.reason,
      before,
      after,
    })

  async function target(locked: Locked, id: number): Promise<UserRow> {
    const user = await locked.repo.findForUpdate(id)
    if (!user) throw userNotFound(id)
    return user
  }

  /**
   * Sets the role; the last admin who can sign in keeps it. When it changed: mails UserRoleChanged
   * and leaves a `user.role` audit record.
   */
  async function applyRole(locked: Locked, user: UserRow, isAdmin: boolean, field: string): Promise<UserRow> {
    if (user.isAdmin === isAdmin) return user
    if (!isAdmin && locked.admins.length === 1 && locked.admins[0] === user.id) throw lastAdmin(field)
    const updated = (await locked.users.setAdmin(user, isAdmin)) ?? user
    await queueMail(userRoleChangedMail(updated), locked.tx)
    await recordChange(
      locked,
      updated,
      'user.role',
      { is_admin: user.isAdmin },
      { is_admin: updated.isAdmin },
    )
    return updated
  }

  return {
    /** Users matching the filters, newest first, as Laravel's paginator JSON; filters stay in the page links. */
    async list(query: ListUsersQuery, path: string): Promise<LengthAwarePage<AdminUserResponse>> {
      const filters = {
        q: query.q?.trim() || undefined,
        role: query.role,
        blocked: query.blocked === undefined ? undefined : query.blocked === 'true' || query.blocked === '1',
      }
      const perPage = query.per_page ?? DEFAULT_PER_PAGE
      const page = query.page ?? 1
      const [total, rows] = await Promise.all([
        repo.count(filters),
        repo.page(filters, perPage, (page - 1) * perPage),
      ])
      const data = await Promise.all(rows.map(present))
      // Laravel's ->withQueryString(): following a page link keeps the filters and page size.
      const { page: _page, ...keep } = query
      const kept = Object.fromEntries(
        Object.entries(keep).filter(([, value]) => value !== undefined && value !== ''),
      )
      return paginate({ data, total, page, perPage, path, query: kept as Record<string, string | number> })
    },

    /** One user, or Laravel's 404. */
    async show(id: number): Promise<AdminUserResponse> {
      const user = await users.findById(id)
      if (!user) throw userNotFound(id)
      return present(user)
    },

    /**
     * Creates an account as registration would (unverified), and mails UserCreated with a
     * verification link. Creating an admin grants the role: it needs a recent password confirmation
     * (423) and leaves a `user.role` audit record, as promoting an existing user does.
     */
    async create(
      actor: UserRow,
      input: CreateUserBody,
      context: AdminEditContext,
    ): Promise<AdminUserResponse> {
      checkConfirmation(input)
      if (input.is_admin && !context.passwordConfirmed) throw passwordConfirmationRequired()
      const user = await asAdmin(actor, { ...context, reason: input.reason }, async (locked) => {
        const created = await locked.users.create({
          name: input.name,
          email: input.email,
          password: input.password,
          isAdmin: input.is_admin ?? false,
        })
        await queueMail(userCreatedMail(created, deps.verificationUrl(created)), locked.tx)
        if (created.isAdmin)
          await recordChange(locked, created, 'user.role', { is_admin: false }, { is_admin: true })
        return created
      })
      return present(user)
    },

    /**
     * Name and email as a profile update does them (a new address is unverified again); a password
     * (mailed about, to the account's address as updated) and a role only when sent.
     * A new password ends the user's sessions, all but `kept` (the actor's own, when editing themself).
     * Changing the email, the password or the role needs a recent password confirmation (423, nothing
     * changed) and leaves one audit record per changed field (a password's says only that it changed).
     */
    async update(
      actor: UserRow,
      id: number,
      input: UpdateUserBody,
      context: AdminEditContext,
    ): Promise<AdminUserResponse> {
      checkConfirmation(input)
      const user = await asAdmin(actor, { ...context, reason: input.reason }, async (locked) => {
        const lockedUsers = locked.users
        const current = await target(locked, id)
        const sensitive =
          input.email.trim().toLowerCase() !== current.email.toLowerCase() ||
          input.password !== undefined ||
          (input.is_admin !== undefined && input.is_admin !== current.isAdmin)
        if (sensitive && !context.passwordConfirmed) throw passwordConfirmationRequired()
        let updated = await lockedUsers.updateProfile(current, { name: input.name, email: input.email })
        if (!updated) throw userNotFound(id)
        if (updated.email !== current.email) {
          await recordChange(
            locked,
            updated,
            'user.email',
            { email: current.email },
            { email: updated.email },
          )
        }
        if (input.password !== undefined) {
          await lockedUsers.setPassword(updated, input.password)
          // As a password change of one's own is told (profile), in case it was not asked for.
          await queueMail(adminPasswordChangedMail(updated), locked.tx)
          // Never the password or its hash: only that it changed.
          await recordChange(locked, updated, 'user.password', {}, { changed: true })
        }
        if (input.is_admin !== undefined)
          updated = await applyRole(locked, updated, input.is_admin, 'is_admin')
        return updated
      })
      if (input.password !== undefined) {
        await events.publish('PasswordChanged', { userId: user.id, kept: context.kept })
      }
      return present(user)
    },

    /**
     * Deletes another user with their personal data (foreign keys cascade: sessions too) and their
     * photo, and leaves a `user.delete` audit record; the money records stay (docs/credits.md). The
     * route asks for the recent password confirmation.
     */
    async remove(actor: UserRow, id: number, origin: AdminChangeOrigin): Promise<void> {
      if (id === actor.id) throw forbidden('You cannot delete your own account.')
      // Read before the transaction: on PGlite's one connection, a read beside it would wait for it.
      const credits = await deps.creditsOf(id)
      const afterCommit = await asAdmin(actor, origin, async (locked) => {
        const user = await target(locked, id)
        // What the account was, without the personal data that goes with it.
        const before = { is_admin: user.isAdmin, blocked: user.blockedAt !== null, ...credits }
        await recordChange(locked, user, 'user.delete', before, { deleted: true })
        return deps.accountDeletion.deleteWithin(locked.tx, user)
      })
      await afterCommit()
    },

    /**
     * Blocks an unblocked user and unblocks a blocked one; mails UserBlockedUnblocked and leaves a
     * `user.block` or `user.unblock` audit record. The route asks for the recent password confirmation.
     */
    async toggleBlock(
      actor: UserRow,
      id: number,
      origin: AdminChangeOrigin,
    ): Promise<{ user: AdminUserResponse; blocked: boolean }> {
      if (id === actor.id) throw forbidden('You cannot block your own account.')
      const user = await asAdmin(actor, origin, async (locked) => {
        const current = await target(locked, id)
        const now = clock.now()
        const blocking = current.blockedAt === null
        const updated = (await locked.users.setBlocked(current, blocking, now)) ?? current
        await recordChange(
          locked,
          current,
          blocking ? 'user.block' : 'user.unblock',
          { blocked: !blocking },
          { blocked: blocking },
        )
        await queueMail(userBlockedUnblockedMail(updated), locked.tx)
        return updated
      })
      return { user: await present(user), blocked: user.blockedAt !== null }
    },

    /**
     * Makes the user an admin or a plain user (themself included, unless they are the last admin);
     * a change leaves a `user.role` audit record. The route asks for the recent password confirmation.
     */
    async changeRole(
      actor: UserRow,
      id: number,
      role: 'user' | 'admin',
      origin: AdminChangeOrigin,
    ): Promise<AdminUserResponse> {
      const user = await asAdmin(actor, origin, async (locked) =>
        applyRole(locked, await target(locked, id), role === 'admin', 'role'),
      )
      return present(user)
    },
  }
}

export type AdminUsersService = ReturnType<typeof createAdminUsersService>
