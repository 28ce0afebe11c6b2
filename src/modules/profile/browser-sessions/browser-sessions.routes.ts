import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses, MessageResponse } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { currentPasswordThrottle } from '../../users/users.throttles.ts'
import { PasswordConfirmationBody } from '../profile.schemas.ts'
import { BrowserSessionsResponse } from './browser-sessions.schemas.ts'

/** Jetstream's browser sessions: the user's own sessions, and signing out every other one. */
export default async function browserSessionsRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { users, browserSessions: browsers } = app.services
  const tags = ['profile']

  app.get(
    '/api/user-profile/sessions',
    {
      config: { auth: 'session' },
      schema: { tags, response: { 200: BrowserSessionsResponse, ...commonErrorResponses } },
    },
    async (request) => {
      return browsers.list(signedInUser(request).id, request.session?.row.id)
    },
  )

  app.post(
    '/api/user-profile/logout-other-sessions',
    {
      config: { auth: 'session', throttle: currentPasswordThrottle },
      schema: {
        tags,
        body: PasswordConfirmationBody,
        response: { 200: MessageResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      // Jetstream's logoutOtherBrowserSessions: the password first, then every session but this one.
      const user = signedInUser(request)
      await users.confirmPassword(user, request.body.password)
      await app.sessionControl.endSessionsOf(user.id, request)
      return { message: 'Your other browser sessions have been logged out.' }
    },
  )
}
