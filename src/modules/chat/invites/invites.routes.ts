import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { GroupParams, GroupResponse } from '../chat.schemas.ts'
import {
  AcceptInviteBody,
  InviteBody,
  InviteListResponse,
  InviteManyBody,
  InviteParams,
  InviteResponse,
  TokenParams,
  ValidateInviteResponse,
} from './invites.schemas.ts'
import type { InvitesService } from './invites.service.ts'
import { inviteMailLimit } from './invites.throttles.ts'

const tags = ['chat']
const config = { auth: 'session' } as const
// Inviting mails a stranger from our domain: only from an address known to be the caller's.
const mailing = { auth: 'verified' } as const

/** Invitations by email: send, list, check a link, accept, revoke or decline, send again. */
export default async function invitesRoutes(
  fastify: FastifyInstance,
  { invites }: { invites: InvitesService },
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.post(
    '/api/invites',
    {
      config: mailing,
      schema: {
        tags,
        summary: 'Invite an address to a group (its owner); mails InviteUserMail',
        body: InviteBody,
        response: { 200: InviteResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) => {
      const { group_id, email } = request.body
      const limit = inviteMailLimit(app, request, reply)
      const [invite] = await invites.invite(signedInUser(request), group_id, [email], () => 'email', limit)
      return { data: invite as NonNullable<typeof invite> }
    },
  )

  app.put(
    '/api/group/:group/invite',
    {
      config: mailing,
      schema: {
        tags,
        summary: 'Invite up to 20 addresses to a group (its owner); mails InviteUserMail to each',
        params: GroupParams,
        body: InviteManyBody,
        response: { 200: InviteListResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) => ({
      data: await invites.invite(
        signedInUser(request),
        request.params.group,
        request.body.emails,
        (index) => `emails.${index}`,
        inviteMailLimit(app, request, reply),
      ),
    }),
  )

  app.get(
    '/api/invites',
    {
      config,
      schema: {
        tags,
        summary: "The invitations waiting for the caller's (verified) email address",
        response: { 200: InviteListResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await invites.list(signedInUser(request)) }),
  )

  app.get(
    '/api/invites/validate/:token',
    {
      config,
      schema: {
        tags,
        summary: 'What an invitation link leads to, without using it',
        params: TokenParams,
        response: { 200: ValidateInviteResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await invites.validate(signedInUser(request), request.params.token) }),
  )

  app.post(
    '/api/invites/accept',
    {
      config,
      schema: {
        tags,
        summary: 'Accept an invitation by its token (or id) and join the group',
        body: AcceptInviteBody,
        response: { 200: GroupResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await invites.accept(signedInUser(request), request.body) }),
  )

  app.delete(
    '/api/invites/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Revoke an invitation (the group owner) or decline it (the invitee)',
        params: InviteParams,
        response: { 200: InviteResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await invites.remove(signedInUser(request), request.params.id) }),
  )

  app.post(
    '/api/invites/:id/resend',
    {
      config: mailing,
      schema: {
        tags,
        summary:
          'Mail a pending invitation again with a new link and expiry (the group owner; 3 more mails an hour)',
        params: InviteParams,
        response: { 200: InviteResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) => ({
      data: await invites.resend(
        signedInUser(request),
        request.params.id,
        inviteMailLimit(app, request, reply),
      ),
    }),
  )
}
