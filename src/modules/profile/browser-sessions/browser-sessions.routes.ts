import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../../config.ts'
import { commonErrorResponses, MessageResponse } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { createRememberTokensService } from '../../sessions/remember-tokens.service.ts'
import { createSessionsService } from '../../sessions/sessions.service.ts'
import { createUsersService } from '../../users/users.service.ts'
import { currentPasswordThrottle } from '../../users/users.throttles.ts'
import { PasswordConfirmationBody } from '../profile.schemas.ts'
import { presentBrowserSession, presentRememberedDevice } from './browser-sessions.presenters.ts'
import { BrowserSessionsResponse } from './browser-sessions.schemas.ts'
import { createBrowserSessionsService } from './browser-sessions.service.ts'

/** Jetstream's browser sessions: the user's own sessions, and signing out every other one. */
export default async function browserSessionsRoutes(
  fastify: FastifyInstance,
  { config }: { config: Config },
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const users = createUsersService({ db: app.db, clock: app.clock })
  const sessions = createSessionsService({
    db: app.db,
    clock: app.clock,
    lifetimeMinutes: config.session.lifetimeMinutes,
    absoluteLifetimeMinutes: config.session.absoluteLifetimeMinutes,
  })
  const remember = createRememberTokensService({
    db: app.db,
    clock: app.clock,
    lifetimeMinutes: config.session.rememberLifetimeMinutes,
  })
  const browsers = createBrowserSessionsService({ sessions, remember })
  const tags = ['profile']

  app.get(
    '/api/user-profile/sessions',
    {
      config: { auth: 'session' },
      schema: { tags, response: { 200: BrowserSessionsResponse, ...commonErrorResponses } },
    },
    async (request) => {
      const entries = await browsers.list(signedInUser(request).id)
      const now = app.clock.now()
      return entries.map((entry) =>
        'session' in entry
          ? presentBrowserSession(entry.session, request.session?.row.id, now)
          : presentRememberedDevice(entry.device, now),
      )
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
