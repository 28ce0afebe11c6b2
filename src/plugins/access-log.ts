import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { redactUrl } from '../lib/logging.ts'
import { httpRequestRecorder } from '../lib/metrics/http-requests.ts'

/**
 * One access-log line per answered request, at `info`, instead of Fastify's two (incoming and
 * completed): flat fields only, cheap to build, written through `logger` (lib/logging.ts
 * createLoggers' `access`: none of its fields can hold a secret, the URL's secret query values are
 * masked, so it needs no redaction pass). The same hook records the request's metrics: every hook
 * is a cost on every request.
 */
async function accessLogPlugin(app: FastifyInstance, { logger: access }: { logger: FastifyBaseLogger }) {
  const recordRequest = app.metrics.enabled ? httpRequestRecorder(app.metrics) : undefined
  app.addHook('onResponse', (request, reply, done) => {
    recordRequest?.(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime)
    access.info(
      {
        request_id: request.id,
        method: request.method,
        url: redactUrl(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
        ip: request.ip,
        user_id: request.user?.id ?? null,
      },
      'request completed',
    )
    done()
  })
}

export default fp(accessLogPlugin, { name: 'access-log', dependencies: ['metrics'] })
