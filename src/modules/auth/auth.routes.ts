import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { signedInUser, type ThrottleRule } from '../../plugins/guards.ts'
import { presentUser } from '../users/users.presenters.ts'
import { UserResponse } from '../users/users.schemas.ts'
import { createUsersService } from '../users/users.service.ts'
import { LoginBody, LoginResponse, RegisterBody } from './auth.schemas.ts'
import { createAuthService } from './auth.service.ts'

// Fortify's `login` limiter: 5 a minute per lower(email)|ip, counting every attempt.
const loginThrottle: ThrottleRule = {
  name: 'login',
  max: 5,
  decaySeconds: 60,
  key: (request) => {
    const email = (request.body as { email?: unknown } | undefined)?.email
    return `${String(email ?? '').toLowerCase()}|${request.ip}`
  },
}

const NoContent = { 204: Type.Null({ description: 'No Content' }) }

/** Sign-up, sign-in, sign-out and the CSRF cookie: Sanctum's and Fortify's routes, under the spec's paths. */
export default async function authRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const users = createUsersService({ db: app.db, clock: app.clock })
  const auth = createAuthService({ users })
  const tags = ['auth']

  app.get('/guard/csrf-cookie', { schema: { tags, response: NoContent } }, async (request, reply) => {
    await app.sessionControl.ensure(request)
    return reply.code(204).send(null)
  })

  app.post(
    '/api/register',
    { schema: { tags, body: RegisterBody, response: { 201: UserResponse, ...commonErrorResponses } } },
    async (request, reply) => {
      const user = await auth.register(request.body)
      await app.sessionControl.signIn(request, user)
      return reply.code(201).send(presentUser(user))
    },
  )

  app.post(
    '/api/login',
    {
      config: { throttle: loginThrottle },
      schema: { tags, body: LoginBody, response: { 200: LoginResponse, ...commonErrorResponses } },
    },
    async (request) => {
      const user = await auth.attemptLogin(request.body)
      await app.sessionControl.signIn(request, user)
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
      config: { auth: 'session' },
      schema: { tags, response: { 200: UserResponse, ...commonErrorResponses } },
    },
    async (request) => presentUser(signedInUser(request)),
  )
}
