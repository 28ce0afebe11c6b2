import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { signedInUser } from '../../plugins/guards.ts'
import {
  Activity,
  ActivityBody,
  ActivityDeletedResponse,
  ActivityListQuery,
  ActivityListResponse,
  ActivityParams,
  DEFAULT_LIST_LIMIT,
  MAX_PAYLOAD_BYTES,
} from './activities.schemas.ts'

// Room for a full payload written with escapes plus the other fields; the service measures the
// payload again as compact JSON.
const BODY_LIMIT = 8 * MAX_PAYLOAD_BYTES

/** `/api/activities`: the signed-in user's activity log. */
export default async function activitiesRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { activities } = app.services
  const tags = ['activities']
  const config = { auth: 'session' } as const

  app.get(
    '/api/activities',
    {
      config,
      schema: {
        tags,
        summary: "The user's newest activities, newest first",
        querystring: ActivityListQuery,
        response: { 200: ActivityListResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({
      data: await activities.latest(signedInUser(request).id, request.query.limit ?? DEFAULT_LIST_LIMIT),
    }),
  )

  app.post(
    '/api/activities',
    {
      bodyLimit: BODY_LIMIT,
      config,
      schema: {
        tags,
        summary: 'Log an activity (never debits credits)',
        body: ActivityBody,
        response: { 200: Activity, ...commonErrorResponses },
      },
    },
    async (request) => activities.log(signedInUser(request).id, request.body),
  )

  app.delete(
    '/api/activities/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Delete one of the user’s activities',
        params: ActivityParams,
        response: { 200: ActivityDeletedResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      await activities.delete(signedInUser(request).id, request.params.id)
      return { message: 'Activity deleted.' }
    },
  )
}
