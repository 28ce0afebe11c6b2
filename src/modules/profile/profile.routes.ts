import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import { commonErrorResponses, MessageResponse } from '../../lib/http-schemas.ts'
import { signedInUser } from '../../plugins/guards.ts'
import { chatAccountRelease } from '../chat/chat.routes.ts'
import { createLedgerService } from '../credits/ledger.service.ts'
import { createEmailVerificationService } from '../email-verification/email-verification.service.ts'
import { presentUser } from '../users/users.presenters.ts'
import { UserResponse } from '../users/users.schemas.ts'
import { createUsersService } from '../users/users.service.ts'
import { currentPasswordThrottle } from '../users/users.throttles.ts'
import browserSessionsRoutes from './browser-sessions/browser-sessions.routes.ts'
import profilePhotosRoutes from './photos/profile-photos.routes.ts'
import { createProfilePhotosService } from './photos/profile-photos.service.ts'
import {
  PasswordConfirmationBody,
  ProfileBody,
  ProfileInformationBody,
  UpdatePasswordBody,
} from './profile.schemas.ts'
import { createProfileService } from './profile.service.ts'

/**
 * The signed-in user's own account (Fortify's and Jetstream's profile actions): profile fields,
 * password, photo, browser sessions, deletion. No route takes a user id, so nobody reaches another's.
 */
export default async function profileRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const users = createUsersService({ db: app.db, clock: app.clock })
  const verification = createEmailVerificationService({ config, clock: app.clock, mailer: app.mailer, users })
  const photos = createProfilePhotosService({ users, storage: app.storage, log: app.log })
  const profile = createProfileService({
    db: app.db,
    clock: app.clock,
    users,
    verification,
    photos,
    mailer: app.mailer,
    releaseChat: chatAccountRelease(app, config),
  })
  const ledger = createLedgerService({ db: app.db, clock: app.clock })
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
      return presentUser(user, { appUrl: config.appUrl, credits: await ledger.summary(user.id) })
    },
  )

  app.put(
    '/api/user-profile/profile',
    { config: auth, schema: { tags, body: ProfileBody, response: userResponse } },
    async (request) => {
      const user = await profile.updateProfile(signedInUser(request), request.body, {
        passwordConfirmed: app.passwordConfirmation.isRecent(request),
      })
      return presentUser(user, { appUrl: config.appUrl, credits: await ledger.summary(user.id) })
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
      await profile.updatePassword(user, request.body)
      // Whoever holds another session with the old password is signed out; this one stays.
      await app.sessionControl.endSessionsOf(user.id, request)
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
      // The sessions went with the account; its sockets close, and this client gets a fresh guest
      // session, as after logout.
      await app.sessionControl.lockOut(user.id)
      await app.sessionControl.signOut(request)
      return { message: 'Your account has been deleted.' }
    },
  )

  await app.register(profilePhotosRoutes, { config })
  await app.register(browserSessionsRoutes, { config })
}
