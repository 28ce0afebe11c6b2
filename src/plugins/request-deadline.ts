import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { runWithinDeadline } from '../lib/request-deadline.ts'

/**
 * Every handler runs within its request's deadline (lib/request-deadline.ts), counted from when the
 * handler starts (a slow upload is not the handler's time); the database refuses the statements of a
 * request given up, so its work is rolled back rather than committed after its answer.
 */
async function requestDeadlinePlugin(app: FastifyInstance, { deadlineMs }: { deadlineMs: number }) {
  app.addHook('preHandler', (_request, reply, done) => runWithinDeadline(reply.raw, deadlineMs, done))
}

export default fp(requestDeadlinePlugin, { name: 'request-deadline' })
