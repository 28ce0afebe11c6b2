import type { FastifyInstance, FastifyReply } from 'fastify'
import { Type } from 'typebox'

const DependencyState = Type.Object({
  up: Type.Boolean(),
  since: Type.String(),
  error: Type.Optional(Type.String()),
})
const Liveness = Type.Object({ status: Type.Literal('ok') })
const Readiness = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('stopping')]),
  dependencies: Type.Record(Type.String(), DependencyState),
})

// A readiness probe asks the database itself (a balancer probing an idle instance would otherwise
// see whatever the last request found), for this long at most.
const PING_WITHIN_MS = 1_000

/**
 * Probes. `/livez`: the process is alive and its event loop turns (only a restart helps when it does
 * not answer). `/readyz` and `/up` (Laravel's name, the same check): this instance can take traffic,
 * i.e. it is not stopping; the start (migrations, the knowledge base) ends before the port opens.
 * PostgreSQL, Redis and the upstream are shared by every instance: their state is in the body (and in
 * `dependency_up`), never in the status, so one shared outage does not take every instance out of
 * rotation at once.
 */
export default async function healthRoutes(app: FastifyInstance) {
  app.get('/livez', { schema: { tags: ['operations'], response: { 200: Liveness } } }, async () => ({
    status: 'ok' as const,
  }))

  const readiness = async (_request: unknown, reply: FastifyReply) => {
    const stopping = app.shutdown.draining.aborted
    if (!stopping) await pingDatabase(app)
    if (stopping) reply.code(503)
    return {
      status: stopping ? ('stopping' as const) : ('ok' as const),
      dependencies: app.dependencyHealth.states(),
    }
  }
  const schema = { tags: ['operations'], response: { 200: Readiness, 503: Readiness } }
  app.get('/readyz', { schema }, readiness)
  app.get('/up', { schema }, readiness)
}

/** Asks the database, so that its state in the body is current; reports what it found. */
async function pingDatabase(app: FastifyInstance) {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      app.database.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${PING_WITHIN_MS} ms`)), PING_WITHIN_MS)
      }),
    ])
    app.dependencyHealth.succeeded('database')
  } catch (error) {
    app.dependencyHealth.failed('database', error)
  } finally {
    clearTimeout(timer)
  }
}
