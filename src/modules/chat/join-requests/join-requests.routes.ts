import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { JoinRequestParams, JoinRequestResponse, RespondBody } from './join-requests.schemas.ts'
import type { createJoinRequestsService } from './join-requests.service.ts'

/** The owner's answer to a request to join a private group. */
export default async function joinRequestsRoutes(
  fastify: FastifyInstance,
  { joinRequests }: { joinRequests: ReturnType<typeof createJoinRequestsService> },
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.post(
    '/api/join-requests/:joinRequest/respond',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['chat'],
        summary: 'Approve or decline a join request (the group owner); emits JoinRequestResponded',
        params: JoinRequestParams,
        body: RespondBody,
        response: { 200: JoinRequestResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({
      data: await joinRequests.respond(signedInUser(request), request.params.joinRequest, request.body),
    }),
  )
}
