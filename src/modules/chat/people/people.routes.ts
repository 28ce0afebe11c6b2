import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { PersonResponse, PersonStatusResponse, UserParams } from './people.schemas.ts'
import type { createPeopleService } from './people.service.ts'

/** Fellow members: who they are and whether they are online. */
export default async function peopleRoutes(
  fastify: FastifyInstance,
  { people }: { people: ReturnType<typeof createPeopleService> },
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const config = { auth: 'session' } as const
  const tags = ['chat']

  app.get(
    '/api/user/:user',
    {
      config,
      schema: {
        tags,
        summary: 'A user who shares a group with the caller (or the caller)',
        params: UserParams,
        response: { 200: PersonResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await people.profile(signedInUser(request), request.params.user) }),
  )

  app.get(
    '/api/user/:user/status',
    {
      config,
      schema: {
        tags,
        summary: 'Whether a fellow member is online, and when they were last seen',
        params: UserParams,
        response: { 200: PersonStatusResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await people.status(signedInUser(request), request.params.user) }),
  )
}
