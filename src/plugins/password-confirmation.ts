import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { unixSeconds } from '../lib/clock.ts'
import { passwordConfirmationRequired } from '../lib/errors.ts'

export interface PasswordConfirmation {
  /**
   * Whether the request's session confirmed the password less than `seconds` ago (PASSWORD_TIMEOUT
   * by default), as Fortify's `auth.password_confirmed_at` is read.
   */
  isRecent(request: FastifyRequest, seconds?: number): boolean
  /** Records on the request's session that its user confirmed the password now. */
  record(request: FastifyRequest): Promise<void>
  /** A route's `preValidation` hook (after the auth guard, before the body is judged): 423 unless recent. */
  require(request: FastifyRequest): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    passwordConfirmation: PasswordConfirmation
  }
}

/**
 * Fortify's `password.confirm`: sensitive actions (2FA setup and codes, an email change) need the
 * password typed again within PASSWORD_TIMEOUT seconds on this session. A new session (every
 * sign-in) starts unconfirmed.
 */
async function passwordConfirmationPlugin(app: FastifyInstance, { config }: { config: Config }) {
  const isRecent = (request: FastifyRequest, seconds = config.passwordTimeoutSeconds) => {
    const confirmedAt = request.session?.row.payload.passwordConfirmedAt
    if (typeof confirmedAt !== 'number' || !request.user) return false
    return unixSeconds(app.clock) - confirmedAt < seconds
  }
  app.decorate('passwordConfirmation', {
    isRecent,
    record: (request) =>
      app.sessionControl.updatePayload(request, { passwordConfirmedAt: unixSeconds(app.clock) }),
    async require(request) {
      if (!isRecent(request)) throw passwordConfirmationRequired()
    },
  } satisfies PasswordConfirmation)
}

export default fp(passwordConfirmationPlugin, {
  name: 'password-confirmation',
  dependencies: ['session', 'clock'],
})
