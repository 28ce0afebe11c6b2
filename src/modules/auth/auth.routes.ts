import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { commonErrorResponses, LoginLockoutResponse } from '../../lib/http-schemas.ts'
import { keyByNetwork, throttleAddress, throttleNetwork } from '../../lib/rate-limit/address.ts'
import { bodyText } from '../../lib/validation.ts'
import { signedInUser, type ThrottleRule, type ThrottleSubject } from '../../plugins/guards.ts'
import { UserResponse } from '../users/users.schemas.ts'
import { LoginBody, LoginResponse, RegisterBody } from './auth.schemas.ts'

const loginEmail = (request: ThrottleSubject) => bodyText(request.body, 'email').toLowerCase()

// Fortify's `login` limiter: 5 a minute per lower(email)|ip, counting every attempt.
const loginThrottle: ThrottleRule = {
  name: 'login',
  max: 5,
  decaySeconds: 60,
  // Read before validation: a crafted email (an object, say) counts as none and goes on to its 422.
  key: (request) => `${loginEmail(request)}|${throttleAddress(request.ip)}`,
  networkKey: (request) => keyByNetwork(request.ip, (network) => `${loginEmail(request)}|${network}`),
}

// Password spraying: one address trying a few passwords on many emails. Counted per address once the
// body is valid; a login that succeeds gives its attempt back, so only failures add up.
const loginFailuresThrottle: ThrottleRule = {
  name: 'login-failures',
  max: 50,
  decaySeconds: 600,
  key: (request) => throttleAddress(request.ip),
  networkKey: (request) => throttleNetwork(request.ip),
}

// Every attempt counts, per address: 30 accounts in 10 minutes is more than any office signs up.
const registerThrottle: ThrottleRule = {
  name: 'register',
  max: 30,
  decaySeconds: 600,
  key: (request) => throttleAddress(request.ip),
  networkKey: (request) => throttleNetwork(request.ip),
}

// Each call without a session stores a new one: per address, far above what browsers behind one
// address start (each opens one, then keeps its cookie).
const guestSessionThrottle: ThrottleRule = {
  name: 'guest-sessions',
  max: 1500,
  decaySeconds: 600,
  key: (request) => throttleAddress(request.ip),
  networkKey: (request) => throttleNetwork(request.ip),
}

const NoContent = { 204: Type.Null({ description: 'No Content' }) }

/** Sign-up, sign-in, sign-out and the CSRF cookie: Sanctum's and Fortify's routes, under the spec's paths. */
export default async function authRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { auth, userView, loginBackoff: backoff, deviceCookies } = app.services
  const tags = ['auth']

  app.get('/guard/csrf-cookie', { schema: { tags, response: NoContent } }, async (request, reply) => {
    if (!request.session) await app.rateLimiter.enforce(guestSessionThrottle, request, reply)
    await app.sessionControl.ensure(request)
    return reply.code(204).send(null)
  })

  app.post(
    '/api/register',
    {
      config: { throttle: registerThrottle },
      schema: { tags, body: RegisterBody, response: { 201: UserResponse, ...commonErrorResponses } },
    },
    async (request, reply) => {
      const user = await auth.register(request.body)
      await app.sessionControl.signIn(request, user)
      reply.header('set-cookie', deviceCookies.issue(user.id))
      return reply.code(201).send(await userView.present(user))
    },
  )

  app.post(
    '/api/login',
    {
      config: { throttle: loginThrottle },
      schema: {
        tags,
        body: LoginBody,
        response: { 200: LoginResponse, ...commonErrorResponses, 429: LoginLockoutResponse },
      },
    },
    async (request, reply) => {
      await app.rateLimiter.enforce(loginFailuresThrottle, request)
      const device = deviceCookies.read(request.headers.cookie)
      const user = await backoff.attempt(request.body.email, device, () => auth.attemptLogin(request.body))
      await app.rateLimiter.refund(loginFailuresThrottle, request)
      const pendingLogin = auth.pendingTwoFactorLogin(user, request.body.remember ?? false)
      if (pendingLogin) {
        // A fresh guest session holds it, so a planted session cookie cannot be used for the challenge.
        // No device cookie yet: the challenge sets it once the second factor passes.
        await app.sessionControl.restartAsGuest(request, { pendingLogin })
        return { two_factor: true }
      }
      await app.sessionControl.signIn(request, user, { remember: request.body.remember ?? false })
      reply.header('set-cookie', deviceCookies.issue(user.id))
      return { two_factor: false }
    },
  )

  app.post(
    '/api/logout',
    { config: { auth: 'session' }, schema: { tags, response: { ...NoContent, ...commonErrorResponses } } },
    async (request, reply) => {
      await app.sessionControl.signOut(request)
      return reply.code(204).send(null)
    },
  )

  app.get(
    '/api/user',
    {
      config: { auth: 'session', noStore: true },
      schema: { tags, response: { 200: UserResponse, ...commonErrorResponses } },
    },
    async (request) => {
      return userView.present(signedInUser(request))
    },
  )
}
