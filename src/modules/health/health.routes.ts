import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'

const HealthResponse = Type.Object({ status: Type.String() })

/** Load balancer probe: 200 while the database answers, 503 when it does not or the instance is stopping. */
export default async function healthRoutes(app: FastifyInstance) {
  app.get(
    '/up',
    { schema: { tags: ['operations'], response: { 200: HealthResponse, 503: HealthResponse } } },
    async (request, reply) => {
      if (app.shutdown.draining.aborted) return reply.code(503).send({ status: 'stopping' })
      try {
        await app.database.ping()
        return { status: 'ok' }
      } catch (error) {
        request.log.warn({ err: error }, 'database did not answer the health check')
        return reply.code(503).send({ status: 'unavailable' })
      }
    },
  )
}
