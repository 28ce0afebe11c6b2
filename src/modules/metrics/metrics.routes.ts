import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { Config } from '../../config.ts'
import { sameToken } from '../../plugins/guards.ts'

const BEARER = /^Bearer +(\S+) *$/i

/**
 * `GET /metrics` for Prometheus, answered only to `Authorization: Bearer <METRICS_TOKEN>`. To anyone
 * else it is an unknown path (the same 404, other methods included), and without METRICS_TOKEN
 * there is no such route. No throttle: a scraper is no user.
 */
export default async function metricsRoutes(app: FastifyInstance, { config }: { config: Config }) {
  const token = config.metricsToken
  if (token === undefined) return

  app.get(
    '/metrics',
    {
      config: { unlisted: true },
      schema: { hide: true, response: { 200: Type.String({ description: 'Prometheus text format' }) } },
    },
    async (request, reply) => {
      const presented = BEARER.exec(request.headers.authorization ?? '')?.[1] ?? ''
      if (!sameToken(presented, token)) return reply.callNotFound()
      const text = await app.metrics.scrape()
      return reply.header('cache-control', 'no-store').type(app.metrics.contentType).send(text)
    },
  )
}
