import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Logger } from 'pino'
import { accessLineWriter, redactUrl } from '../lib/logging.ts'
import { httpRequestRecorder } from '../lib/metrics/http-requests.ts'

/**
 * One access-log line per answered request, at `info`, instead of Fastify's two (incoming and
 * completed): flat fields only, built as one string and written through `logger`'s destination
 * (lib/logging.ts accessLineWriter: none of its fields can hold a secret, the URL's secret query
 * values are masked, so it needs no redaction pass). The same hook records the request's metrics:
 * every hook is a cost on every request.
 */
async function accessLogPlugin(app: FastifyInstance, { logger }: { logger: Logger }) {
  const recordRequest = app.metrics.enabled ? httpRequestRecorder(app.metrics) : undefined
  const writeLine = accessLineWriter(logger)
  app.addHook('onResponse', (request, reply, done) => {
    recordRequest?.(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime)
    writeLine({
      requestId: request.id,
      method: request.method,
      url: redactUrl(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
      ip: request.ip,
      userId: request.user?.id ?? null,
    })
    done()
  })
}

export default fp(accessLogPlugin, { name: 'access-log', dependencies: ['metrics'] })
