import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { createMetrics, type Metrics } from '../lib/metrics/metrics.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's Prometheus series: plugins and modules register theirs here; GET /metrics reads them. */
    metrics: Metrics
  }
}

/** `app.metrics`, a registry per app; recording per request only when METRICS_TOKEN lets someone read it. */
async function metricsPlugin(app: FastifyInstance, { config }: { config: Config }) {
  app.decorate(
    'metrics',
    createMetrics({
      enabled: config.metricsToken !== undefined,
      onReadError: (error, metric) =>
        app.log.warn({ err: error, metric }, 'metrics: a gauge could not be read'),
    }),
  )
}

export default fp(metricsPlugin, { name: 'metrics' })
