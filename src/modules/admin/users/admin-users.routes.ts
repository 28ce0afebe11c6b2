import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../../config.ts'
import { commonErrorResponses, MessageResponse, Paginated } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { sessionRefOfRequest } from '../../../plugins/session.ts'
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

/** Admin user management: list, create, show, edit, delete, block and unblock, change the role. */
export default async function adminUsersRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { adminUsers: admin } = app.services
  const tags = ['admin']
  const guard = { auth: 'admin' } as const
  const userResponse = { 200: AdminUserResponse, ...commonErrorResponses }
  const actionResponse = { 200: UserActionResponse, ...commonErrorResponses }
  // An email, password or role change (an admin created, too) needs the password confirmed recently
  // on this session: 423 otherwise, as the profile's email change and the admin billing changes.
  const editContext = (request: FastifyRequest) => ({
    kept: sessionRefOfRequest(request),
    ipAddress: request.ip ?? null,
    passwordConfirmed: app.passwordConfirmation.isRecent(request),
  })

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
        summary: 'Create a user (mails UserCreated; an admin needs a recent password confirmation, 423)',
        body: CreateUserBody,
        response: { 201: AdminUserResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await admin.create(signedInUser(request), request.body, editContext(request))),
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
        summary:
          'Edit a user (an email, password or role change is audited and needs a recent password confirmation, 423)',
        params: UserIdParams,
        body: UpdateUserBody,
        response: userResponse,
      },
    },
    // A new password signs the user out everywhere (but this session, when admins edit themselves).
    async (request) =>
      admin.update(signedInUser(request), request.params.id, request.body, editContext(request)),
  )

  app.delete(
    '/api/users/:id',
    {
      config: guard,
      preValidation: app.passwordConfirmation.require,
      schema: {
        tags,
        summary:
          'Delete a user and their personal data, keeping their money records (not oneself; audited; 423 without a recent password confirmation)',
        params: UserIdParams,
        response: { 200: MessageResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      await admin.remove(signedInUser(request), request.params.id, { ipAddress: request.ip ?? null })
      return { message: 'User deleted.' }
    },
  )

  app.post(
    '/api/user/block-unblock/:user',
    {
      config: guard,
      preValidation: app.passwordConfirmation.require,
      schema: {
        tags,
        summary:
          'Block or unblock a user (not oneself; mails UserBlockedUnblocked; audited; 423 without a recent password confirmation)',
        params: UserParams,
        response: actionResponse,
      },
    },
    async (request) => {
      const { user, blocked } = await admin.toggleBlock(signedInUser(request), request.params.user, {
        ipAddress: request.ip ?? null,
      })
      // Signed out at once, sockets closed; the session plugin also refuses a blocked user's cookie.
      if (blocked) await app.sessionControl.lockOut(user.id)
      return { message: blocked ? 'User blocked.' : 'User unblocked.', user }
    },
  )

  app.post(
    '/api/user/change-role/:user',
    {
      config: guard,
      preValidation: app.passwordConfirmation.require,
      schema: {
        tags,
        summary:
          'Make a user an admin or a plain user (mails UserRoleChanged; audited; 423 without a recent password confirmation)',
        params: UserParams,
        body: ChangeRoleBody,
        response: actionResponse,
      },
    },
    async (request) => {
      const { role, reason } = request.body
      const user = await admin.changeRole(signedInUser(request), request.params.user, role, {
        ipAddress: request.ip ?? null,
        reason,
      })
      return { message: `The user's role is now ${request.body.role}.`, user }
    },
  )
}
