import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type RequestTiming, requestTiming, runWithin } from '../lib/request-deadline.ts'

declare module 'fastify' {
  interface FastifyRequest {
    timing: RequestTiming | null
  }
}

/**
 * Every request runs within its deadline (lib/request-deadline.ts), counted from its arrival as the
 * balancer counts its read time-out (nginx buffers the body, so it arrives whole); the database
 * refuses the statements of a request given up, so its work is rolled back rather than committed
 * after its answer. Before the session plugin's hook, so a lookup for a client gone is spared too.
 */
async function requestDeadlinePlugin(app: FastifyInstance, { deadlineMs }: { deadlineMs: number }) {
  app.decorateRequest('timing', null)
  app.addHook('onRequest', (request, reply, done) => {
    request.timing = requestTiming(reply.raw, deadlineMs)
    runWithin(request.timing, done)
  })
  app.addHook('preHandler', (request, _reply, done) =>
    request.timing ? runWithin(request.timing, done) : done(),
  )
}

export default fp(requestDeadlinePlugin, { name: 'request-deadline' })
