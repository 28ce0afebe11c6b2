import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database, Db } from '../db/client.ts'
import type { Metrics } from '../lib/metrics/metrics.ts'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
    database: Database
  }
}

/** Hands the opened database to every module; closing the app closes it. */
async function dbPlugin(app: FastifyInstance, { database }: { database: Database }) {
  app.decorate('database', database)
  app.decorate('db', database.db)
  app.addHook('onClose', () => database.close())
  watchForReturn(app, database)
  // PGlite has no pool: no series rather than numbers that mean nothing.
  const { poolUsage } = database
  if (poolUsage) registerPoolMetrics(app.metrics, poolUsage)
}

/** How often a database found down is asked again, so its return is noticed without any request. */
export const DATABASE_PROBE_EVERY_MS = 1_000

/**
 * Once a use finds the database unavailable (plugins/errors.ts), it is pinged every second until it
 * answers, which marks it available again (one log line, dependency_up back to 1).
 */
function watchForReturn(app: FastifyInstance, database: Database) {
  const stop = app.dependencyHealth.probeWhileDown('database', () => database.ping(), DATABASE_PROBE_EVERY_MS)
  app.addHook('onClose', async () => stop())
}

/** The PostgreSQL pool's connections (total, idle) and the queries waiting for one, read when scraped. */
function registerPoolMetrics(metrics: Metrics, usage: NonNullable<Database['poolUsage']>) {
  metrics.gauge({
    name: 'db_pool_connections',
    help: 'Connections the PostgreSQL pool holds, in all and idle.',
    labelNames: ['state'],
    read(set) {
      const { total, idle } = usage()
      set({ state: 'total' }, total)
      set({ state: 'idle' }, idle)
    },
  })
  metrics.gauge({
    name: 'db_pool_waiting_queries',
    help: 'Queries waiting for a connection of the PostgreSQL pool.',
    read: (set) => set({}, usage().waiting),
  })
}

export default fp(dbPlugin, { name: 'db', dependencies: ['metrics', 'dependency-health'] })
