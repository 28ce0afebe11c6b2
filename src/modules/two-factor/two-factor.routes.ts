import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { keyByNetwork, throttleAddress } from '../../lib/rate-limit/address.ts'
import { signedInUser, type ThrottleRule } from '../../plugins/guards.ts'
import { currentPasswordThrottle } from '../users/users.throttles.ts'
import { createTwoFactorLockout } from './two-factor.lockout.ts'
import {
  ChallengeBody,
  ChallengeResponse,
  ConfirmBody,
  EnableResponse,
  PasswordBody,
  RecoveryCodes,
  TwoFactorStateResponse,
} from './two-factor.schemas.ts'

// Fortify's `two-factor` limiter: 5 a minute per pending login (`login.id`), counting every attempt;
// without one, per session, so probing without a password is limited too. Pending logins of one
// account and one password share it; one left from before a password change (dead) cannot use up
// the owner's attempts.
const challengeThrottle: ThrottleRule = {
  name: 'two-factor',
  max: 5,
  decaySeconds: 60,
  key: (request) => {
    const pending = request.session?.row.payload.pendingLogin
    if (pending) return `user:${pending.userId}:${pending.credentials?.slice(0, 16) ?? ''}`
    return request.session ? `session:${request.session.row.id}` : `ip:${throttleAddress(request.ip)}`
  },
  networkKey: (request) =>
    request.session ? undefined : keyByNetwork(request.ip, (network) => `ip:${network}`),
}

/** Two-factor authentication: Fortify's management routes under /api/user, and the login challenge. */
export default async function twoFactorRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { users, twoFactor, deviceCookies } = app.services
  const tags = ['two-factor']
  const session = { auth: 'session' } as const
  // Fortify's `password.confirm` on its 2FA routes: 423 without a recent confirmation, before the body.
  const confirmed = { preValidation: app.passwordConfirmation.require }
  // The secret, its QR code and the recovery codes: kept by no cache, shared or the browser's.
  const secrets = { auth: 'session', noStore: true } as const
  const lockout = createTwoFactorLockout({
    counters: app.rateLimiter.counters,
    refuse: app.rateLimiter.tooManyAttempts,
    clock: app.clock,
    users,
    queueMail: (mail) => app.mailer.queue(mail),
  })

  app.post(
    '/api/user/two-factor-authentication',
    {
      config: { ...secrets, throttle: currentPasswordThrottle },
      ...confirmed,
      schema: { tags, body: PasswordBody, response: { 200: EnableResponse, ...commonErrorResponses } },
    },
    async (request) => twoFactor.enable(signedInUser(request), request.body.password),
  )

  app.post(
    '/api/user/confirmed-two-factor-authentication',
    {
      config: session,
      ...confirmed,
      schema: { tags, body: ConfirmBody, response: { 200: TwoFactorStateResponse, ...commonErrorResponses } },
    },
    async (request) => {
      await twoFactor.confirm(signedInUser(request), request.body.code)
      return { two_factor_enabled: true }
    },
  )

  app.delete(
    '/api/user/two-factor-authentication',
    {
      config: { ...session, throttle: currentPasswordThrottle },
      ...confirmed,
      schema: {
        tags,
        body: PasswordBody,
        response: { 200: TwoFactorStateResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      await twoFactor.disable(signedInUser(request), request.body.password)
      return { two_factor_enabled: false }
    },
  )

  app.get(
    '/api/user/two-factor-recovery-codes',
    {
      config: secrets,
      ...confirmed,
      schema: { tags, response: { 200: RecoveryCodes, ...commonErrorResponses } },
    },
    async (request) => twoFactor.recoveryCodes(signedInUser(request)),
  )

  app.post(
    '/api/user/two-factor-recovery-codes',
    {
      config: secrets,
      ...confirmed,
      schema: { tags, response: { 200: RecoveryCodes, ...commonErrorResponses } },
    },
    async (request) => twoFactor.regenerateRecoveryCodes(signedInUser(request)),
  )

  app.post(
    '/api/two-factor-challenge',
    {
      config: { throttle: challengeThrottle },
      schema: { tags, body: ChallengeBody, response: { 200: ChallengeResponse, ...commonErrorResponses } },
    },
    async (request, reply) => {
      // A pending login that expired, or whose password changed since, is none: its codes count nowhere.
      const pending = await twoFactor.livePendingLogin(request.session?.row.payload.pendingLogin)
      const user = await lockout.attempt(pending, () => twoFactor.passChallenge(pending, request.body))
      // A new session id and CSRF token; the pending login ends with the old session. Fortify's
      // `login.remember`: the box ticked at the password step remembers the device now.
      await app.sessionControl.signIn(request, user, { remember: pending?.remember ?? false })
      // Signed in at last: this browser is known to the login back-off from now on.
      reply.header('set-cookie', deviceCookies.issue(user.id))
      return { two_factor: false }
    },
  )
}
