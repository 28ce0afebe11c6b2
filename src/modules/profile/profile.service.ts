import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { passwordConfirmationRequired, unauthenticated, ValidationError } from '../../lib/errors.ts'
import type { EventBus } from '../../lib/events.ts'
import { renderMail } from '../../lib/mail/message.ts'
import { hashPassword } from '../../lib/passwords.ts'
import type { SessionRef } from '../../lib/sessions/session-store.ts'
import type { FieldErrors } from '../../lib/validation.ts'
import type { ServiceEvents } from '../../plugins/events.ts'
import type { Mailer } from '../../plugins/mailer.ts'
import type { EmailVerificationService } from '../email-verification/email-verification.service.ts'
import type { AccountDeletionService } from '../users/account-deletion.service.ts'
import type { UsersService } from '../users/users.service.ts'
import type { ProfileBody, UpdatePasswordBody } from './profile.schemas.ts'

// Stored as E.164: "+" and the digits, whatever separators were typed.
const e164 = (phone: string) => `+${phone.replace(/\D/g, '')}`

/** To the account's address after a password update, in case it was not its owner. */
const passwordChangedMail = (user: UserRow) =>
  renderMail(user.email, {
    subject: 'Your password has been changed',
    lines: [
      'The password of your account was just changed, and your other browser sessions were signed out.',
      'If this was you, no further action is required.',
    ],
    outro: ['If it was not you, reset your password at once and contact support.'],
  })

export function createProfileService(deps: {
  db: Db
  clock: Clock
  users: UsersService
  verification: EmailVerificationService
  mailer: Pick<Mailer, 'queue'>
  accountDeletion: AccountDeletionService
  events: EventBus<ServiceEvents>
}) {
  const { users, verification } = deps

  return {
    /**
     * Saves name, email and whichever optional fields were sent. A new email address needs a recent
     * password confirmation (423 otherwise) and is only pending: the account keeps its address (for
     * sign-in and password reset) until the link mailed to the new one is followed, and the current
     * address is told, in the same transaction.
     */
    async updateProfile(
      user: UserRow,
      input: ProfileBody,
      { passwordConfirmed }: { passwordConfirmed: boolean },
    ): Promise<UserRow> {
      const changes = { ...input, phone: input.phone ? e164(input.phone) : input.phone }
      const emailChanged = input.email.trim().toLowerCase() !== user.email.toLowerCase()
      if (emailChanged && !passwordConfirmed) throw passwordConfirmationRequired()
      const updated = await deps.db.transaction(async (tx) => {
        const saved = await users.within(tx).updateProfile(user, changes, {
          pendingEmail: true,
        })
        if (saved && emailChanged) await verification.announceEmailChange(saved, tx)
        return saved
      })
      if (!updated) throw unauthenticated()
      return updated
    },

    /**
     * Fortify's UpdateUserPassword: the current password must be right and the new one confirmed;
     * both problems are reported together, as Laravel's validator does. The new hash and the notice
     * to the account's address are written in one transaction (the hash is computed before it).
     */
    async updatePassword(user: UserRow, input: UpdatePasswordBody, kept: SessionRef | null): Promise<void> {
      const errors: FieldErrors = {}
      try {
        await users.confirmPassword(user, input.current_password, 'current_password')
      } catch (error) {
        if (!(error instanceof ValidationError)) throw error
        Object.assign(errors, error.errors)
      }
      if (input.password_confirmation !== input.password) {
        errors.password = ['The password field confirmation does not match.']
      }
      if (Object.keys(errors).length > 0) throw new ValidationError(errors)
      const hash = await hashPassword(input.password)
      const updated = await deps.db.transaction(async (tx) => {
        const saved = await users.within(tx).setPasswordHash(user, hash)
        if (saved) await deps.mailer.queue(passwordChangedMail(saved), tx)
        return saved
      })
      if (!updated) throw unauthenticated()
      await deps.events.publish('PasswordChanged', { userId: user.id, kept })
    },

    /**
     * Jetstream's DeleteUser, after the password: the account, everything it owns, and its photo;
     * its chat groups are handed over (or deleted) in the same transaction. The last admin stays (403).
     */
    async deleteAccount(user: UserRow, password: string): Promise<void> {
      await users.confirmPassword(user, password)
      await deps.accountDeletion.deleteOwnAccount(user)
    },
  }
}

export type ProfileService = ReturnType<typeof createProfileService>
