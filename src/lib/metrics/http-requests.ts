import type { Histogram } from 'prom-client'
import type { CounterSeries, Metrics } from './metrics.ts'

/** The route label of a request no route matched (404, 405): one value, never the path asked for. */
export const UNMATCHED_ROUTE = 'unmatched'

// From a cached read (tens of microseconds) to an assistant answer streamed for a minute.
const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
]

interface RequestSeries {
  requests: CounterSeries
  latency: Histogram.Internal<string>
}

/**
 * Records an answered request in `http_requests_total` and `http_request_duration_seconds` by
 * method, route pattern and status. The series of each combination are made once and kept, so a
 * request costs one Map lookup, a count and an observation.
 */
export function httpRequestRecorder(metrics: Metrics) {
  const labelNames = ['method', 'route', 'status_code'] as const
  const requests = metrics.counter({
    name: 'http_requests_total',
    help: 'Requests answered, by method, route pattern and status code.',
    labelNames,
  })
  const latency = metrics.histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request to its answer, by method, route pattern and status code.',
    labelNames,
    buckets: LATENCY_BUCKETS,
  })
  const kept = new Map<string, RequestSeries>()

  /** `route`: the matched route's pattern (`/api/strategies/:id`), undefined when none matched. */
  return (method: string, route: string | undefined, status: number, elapsedMs: number) => {
    const key = `${method} ${status} ${route}`
    let series = kept.get(key)
    if (!series) {
      const labels = { method, route: route ?? UNMATCHED_ROUTE, status_code: String(status) }
      series = { requests: requests.series(labels), latency: latency.labels(labels) }
      kept.set(key, series)
    }
    series.requests.inc()
    series.latency.observe(elapsedMs / 1000)
  }
}
