import type { Metrics } from '../metrics/metrics.ts'
import { type UpstreamClient, UpstreamError } from './client.ts'

// From a nearby answer (a few milliseconds) to UPSTREAM_TIMEOUT_MS's default of 10 s and past it.
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/** `2xx`...`5xx` for an answer, the failure's kind otherwise: a few values, never the URL. */
function outcomeOf(error: unknown): string {
  if (!(error instanceof UpstreamError)) return 'error'
  if (error.kind === 'status' && error.upstreamStatus !== undefined) return statusClass(error.upstreamStatus)
  return error.kind.replace('-', '_')
}

const statusClass = (status: number) => `${Math.floor(status / 100)}xx`

/**
 * The client, timed: `upstream_request_duration_seconds` and `upstream_errors_total` by method and
 * outcome (status class, or timeout, network, invalid_body).
 */
export function measuredUpstreamClient(client: UpstreamClient, metrics: Metrics): UpstreamClient {
  const labelNames = ['method', 'outcome'] as const
  const latency = metrics.histogram({
    name: 'upstream_request_duration_seconds',
    help: 'Calls to the upstream trading-data API, by method and outcome.',
    labelNames,
    buckets: LATENCY_BUCKETS,
  })
  const errors = metrics.counter({
    name: 'upstream_errors_total',
    help: 'Failed calls to the upstream trading-data API, by method and outcome.',
    labelNames,
  })
  return {
    async request(req) {
      const started = performance.now()
      let outcome = 'error'
      try {
        const res = await client.request(req)
        outcome = statusClass(res.status)
        return res
      } catch (error) {
        outcome = outcomeOf(error)
        errors.series({ method: req.method, outcome }).inc()
        throw error
      } finally {
        latency.labels({ method: req.method, outcome }).observe((performance.now() - started) / 1000)
      }
    },
    close: () => client.close(),
  }
}
