import type { UserRow } from '../../db/schema/index.ts'
import { ValidationError } from '../../lib/errors.ts'
import type { UsersService } from '../users/users.service.ts'
import type { LoginBody, RegisterBody } from './auth.schemas.ts'

export function createAuthService({ users }: { users: UsersService }) {
  return {
    /** Creates the account; `password_confirmation`, when sent, must match (Laravel's `confirmed`). */
    async register(input: RegisterBody): Promise<UserRow> {
      if (input.password_confirmation !== undefined && input.password_confirmation !== input.password) {
        throw ValidationError.withMessages({ password: ['The password field confirmation does not match.'] })
      }
      return users.create({ name: input.name, email: input.email, password: input.password })
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
  }
}
