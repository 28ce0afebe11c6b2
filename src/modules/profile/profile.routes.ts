import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses, MessageResponse } from '../../lib/http-schemas.ts'
import { signedInUser } from '../../plugins/guards.ts'
import { sessionRefOfRequest } from '../../plugins/session.ts'
import { UserResponse } from '../users/users.schemas.ts'
import { currentPasswordThrottle } from '../users/users.throttles.ts'
import browserSessionsRoutes from './browser-sessions/browser-sessions.routes.ts'
import profilePhotosRoutes from './photos/profile-photos.routes.ts'
import {
  PasswordConfirmationBody,
  ProfileBody,
  ProfileInformationBody,
  UpdatePasswordBody,
} from './profile.schemas.ts'

/**
 * The signed-in user's own account (Fortify's and Jetstream's profile actions): profile fields,
 * password, photo, browser sessions, deletion. No route takes a user id, so nobody reaches another's.
 */
export default async function profileRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { profile, userView } = app.services
  const tags = ['profile']
  const auth = { auth: 'session' } as const
  const userResponse = { 200: UserResponse, ...commonErrorResponses }
  const messageResponse = { 200: MessageResponse, ...commonErrorResponses }

  app.put(
    '/api/user-profile/profile-information',
    { config: auth, schema: { tags, body: ProfileInformationBody, response: userResponse } },
    async (request) => {
      const user = await profile.updateProfile(signedInUser(request), request.body, {
        passwordConfirmed: app.passwordConfirmation.isRecent(request),
      })
      return userView.present(user)
    },
  )

  app.put(
    '/api/user-profile/profile',
    { config: auth, schema: { tags, body: ProfileBody, response: userResponse } },
    async (request) => {
      const user = await profile.updateProfile(signedInUser(request), request.body, {
        passwordConfirmed: app.passwordConfirmation.isRecent(request),
      })
      return userView.present(user)
    },
  )

  app.put(
    '/api/user-profile/password',
    {
      config: { ...auth, throttle: currentPasswordThrottle },
      schema: { tags, body: UpdatePasswordBody, response: messageResponse },
    },
    async (request) => {
      const user = signedInUser(request)
      // Whoever holds another session with the old password is signed out; this one stays.
      await profile.updatePassword(user, request.body, sessionRefOfRequest(request))
      return { message: 'Your password has been updated.' }
    },
  )

  app.delete(
    '/api/user-profile',
    {
      config: { ...auth, throttle: currentPasswordThrottle },
      schema: { tags, body: PasswordConfirmationBody, response: messageResponse },
    },
    async (request) => {
      const user = signedInUser(request)
      await profile.deleteAccount(user, request.body.password)
      // This client gets a fresh guest session, as after logout.
      await app.sessionControl.signOut(request)
      return { message: 'Your account has been deleted.' }
    },
  )

  await app.register(profilePhotosRoutes)
  await app.register(browserSessionsRoutes)
}
