import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../../config.ts'
import { commonErrorResponses, MessageResponse, Paginated } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { chatAccountRelease } from '../../chat/chat.routes.ts'
import { createLedgerService } from '../../credits/ledger.service.ts'
import { createEmailVerificationService } from '../../email-verification/email-verification.service.ts'
import { createProfilePhotosService } from '../../profile/photos/profile-photos.service.ts'
import { createUsersService } from '../../users/users.service.ts'
import {
  AdminUserResponse,
  ChangeRoleBody,
  CreateUserBody,
  ListUsersQuery,
  UpdateUserBody,
  UserActionResponse,
  UserIdParams,
  UserParams,
} from './admin-users.schemas.ts'
import { createAdminUsersService } from './admin-users.service.ts'

/** Admin user management: list, create, show, edit, delete, block and unblock, change the role. */
export default async function adminUsersRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const users = createUsersService({ db: app.db, clock: app.clock })
  const verification = createEmailVerificationService({ config, clock: app.clock, mailer: app.mailer, users })
  const photos = createProfilePhotosService({ users, storage: app.storage, log: app.log })
  const ledger = createLedgerService({ db: app.db, clock: app.clock })
  const admin = createAdminUsersService({
    db: app.db,
    clock: app.clock,
    appUrl: config.appUrl,
    queueMail: (mail, tx) => app.mailer.queue(mail, tx),
    verificationUrl: verification.verificationUrl,
    creditsOf: (userId) => ledger.summary(userId),
    discardPhoto: photos.discard,
    releaseChat: chatAccountRelease(app, config),
  })
  const tags = ['admin']
  const guard = { auth: 'admin' } as const
  const userResponse = { 200: AdminUserResponse, ...commonErrorResponses }
  const actionResponse = { 200: UserActionResponse, ...commonErrorResponses }

  app.get(
    '/api/users',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Users, newest first, filtered by name or email, role and block state',
        querystring: ListUsersQuery,
        response: { 200: Paginated(AdminUserResponse), ...commonErrorResponses },
      },
    },
    async (request) => admin.list(request.query, `${config.appUrl}/api/users`),
  )

  app.post(
    '/api/users',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Create a user (mails UserCreated)',
        body: CreateUserBody,
        response: { 201: AdminUserResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) => reply.code(201).send(await admin.create(signedInUser(request), request.body)),
  )

  app.get(
    '/api/users/:id',
    { config: guard, schema: { tags, summary: 'One user', params: UserIdParams, response: userResponse } },
    async (request) => admin.show(request.params.id),
  )

  app.put(
    '/api/users/:id',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Edit a user',
        params: UserIdParams,
        body: UpdateUserBody,
        response: userResponse,
      },
    },
    async (request) => {
      const { user, passwordChanged } = await admin.update(
        signedInUser(request),
        request.params.id,
        request.body,
      )
      // A new password signs the user out everywhere (but this session, when admins edit themselves).
      if (passwordChanged) await app.sessionControl.endSessionsOf(user.id, request)
      return user
    },
  )

  app.delete(
    '/api/users/:id',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Delete a user and everything they own (not oneself)',
        params: UserIdParams,
        response: { 200: MessageResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      await admin.remove(signedInUser(request), request.params.id)
      // The sessions went with the account; what it holds open (sockets) goes now.
      await app.sessionControl.lockOut(request.params.id)
      return { message: 'User deleted.' }
    },
  )

  app.post(
    '/api/user/block-unblock/:user',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Block or unblock a user (not oneself; mails UserBlockedUnblocked)',
        params: UserParams,
        response: actionResponse,
      },
    },
    async (request) => {
      const { user, blocked } = await admin.toggleBlock(signedInUser(request), request.params.user)
      // Signed out at once, sockets closed; the session plugin also refuses a blocked user's cookie.
      if (blocked) await app.sessionControl.lockOut(user.id)
      return { message: blocked ? 'User blocked.' : 'User unblocked.', user }
    },
  )

  app.post(
    '/api/user/change-role/:user',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Make a user an admin or a plain user (mails UserRoleChanged)',
        params: UserParams,
        body: ChangeRoleBody,
        response: actionResponse,
      },
    },
    async (request) => {
      const user = await admin.changeRole(signedInUser(request), request.params.user, request.body.role)
      return { message: `The user's role is now ${request.body.role}.`, user }
    },
  )
}
