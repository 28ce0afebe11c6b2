import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Logger } from 'pino'
import { accessLineWriter, redactUrl } from '../lib/logging.ts'
import { httpRequestRecorder } from '../lib/metrics/http-requests.ts'

/** An answered request, as the access log and the request metrics take it. */
export interface AnsweredRequest {
  requestId: string
  method: string
  /** The URL as asked for (its secret query values are masked here). */
  url: string
  /** The matched route's pattern, undefined when none matched. */
  route: string | undefined
  status: number
  elapsedMs: number
  ip: string | undefined
  userId: number | null
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Logs and counts an answered request (the warm-read lane's own answers come here too). */
    recordAnswered(answered: AnsweredRequest): void
  }
}

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
  const recordAnswered = (answered: AnsweredRequest) => {
    recordRequest?.(answered.method, answered.route, answered.status, answered.elapsedMs)
    writeLine({
      requestId: answered.requestId,
      method: answered.method,
      url: redactUrl(answered.url),
      status: answered.status,
      ms: Math.round(answered.elapsedMs * 100) / 100,
      ip: answered.ip,
      userId: answered.userId,
    })
  }
  app.decorate('recordAnswered', recordAnswered)
  app.addHook('onResponse', (request, reply, done) => {
    recordAnswered({
      requestId: request.id,
      method: request.method,
      url: request.url,
      route: request.routeOptions.url,
      status: reply.statusCode,
      elapsedMs: reply.elapsedTime,
      ip: request.ip,
      userId: request.user?.id ?? null,
    })
    done()
  })
}

export default fp(accessLogPlugin, { name: 'access-log', dependencies: ['metrics'] })
