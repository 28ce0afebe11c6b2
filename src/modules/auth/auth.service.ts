import type { UserRow } from '../../db/schema/index.ts'
import { type Clock, unixSeconds } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import type { EmailVerificationService } from '../email-verification/email-verification.service.ts'
import { credentialsStamp, type PendingLogin, twoFactorRequired } from '../two-factor/two-factor.service.ts'
import type { UsersService } from '../users/users.service.ts'
import type { LoginBody, RegisterBody } from './auth.schemas.ts'

export function createAuthService({
  users,
  clock,
  verification,
}: {
  users: UsersService
  clock: Clock
  verification: Pick<EmailVerificationService, 'sendLink'>
}) {
  return {
    /**
     * Creates the account; `password_confirmation`, when sent, must match (Laravel's `confirmed`).
     * Laravel's Registered event: the verification link is queued in the account's own transaction
     * (both exist, or neither); the outbox sends it after the answer.
     */
    async register(input: RegisterBody): Promise<UserRow> {
      if (input.password_confirmation !== undefined && input.password_confirmation !== input.password) {
        throw ValidationError.withMessages({ password: ['The password field confirmation does not match.'] })
      }
      return users.create({ name: input.name, email: input.email, password: input.password }, (user, tx) =>
        verification.sendLink(user, tx),
      )
    },

    /**
     * Fortify's AttemptToAuthenticate: wrong email or wrong password is the same 422 on `email`,
     * so the answer never tells whether an account exists.
     */
    async attemptLogin(input: LoginBody): Promise<UserRow> {
      const user = await users.verifyCredentials(input.email, input.password)
      if (!user) {
        throw ValidationError.withMessages({ email: ['These credentials do not match our records.'] })
      }
      // Said only to someone who knows the password, so it reveals nothing to a guesser.
      if (user.blockedAt) {
        throw ValidationError.withMessages({
          email: ['This account has been blocked. Please contact support.'],
        })
      }
      return user
    },

    /**
     * Fortify's RedirectIfTwoFactorAuthenticatable: a user with 2FA on is not signed in by the
     * password alone; the session keeps this pending login until the challenge is passed. It is bound
     * to the password it was started with: a reset or change meanwhile ends it.
     */
    pendingTwoFactorLogin(user: UserRow, remember: boolean): PendingLogin | undefined {
      if (!twoFactorRequired(user)) return undefined
      return { userId: user.id, remember, startedAt: unixSeconds(clock), credentials: credentialsStamp(user) }
    },
  }
}
