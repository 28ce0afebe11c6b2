import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { withCircuitBreaker } from '../lib/upstream/circuit-breaker.ts'
import {
  createUnconfiguredUpstreamClient,
  createUpstreamClient,
  type UpstreamClient,
} from '../lib/upstream/client.ts'
import { measuredUpstreamClient } from '../lib/upstream/measured-client.ts'
import type { ThrottleRule } from './guards.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The one keep-alive client to the upstream trading-data API; failures throw UpstreamError (500 `{error}`). */
    upstream: UpstreamClient
    /**
     * The per-user limit on proxied reads (PROXY_READS_PER_MINUTE), so that one session cannot spend
     * the upstream quota every user shares by varying ids, symbols and pages past the cache. The AI
     * tools' proxied reads spend it too.
     */
    upstreamReadThrottle: ThrottleRule
    /**
     * The per-user limit on proxied writes (PROXY_WRITES_PER_MINUTE): strategy and condition
     * changes and actions, which no cache absorbs.
     */
    upstreamWriteThrottle: ThrottleRule
  }
}

/**
 * Decorates `app.upstream` from config.upstream: behind the circuit breaker, which tells dependency
 * health each fault and answer, and timed (breaker refusals too, as outcome `circuit_open`). Without a
 * base URL every call fails with a clear error, and nothing is down.
 */
async function upstreamPlugin(app: FastifyInstance, options: { config: Config }) {
  const { upstream } = options.config
  const client = measuredUpstreamClient(
    upstream.baseUrl
      ? withCircuitBreaker(
          createUpstreamClient({
            baseUrl: upstream.baseUrl,
            token: upstream.token,
            timeoutMs: upstream.timeoutMs,
          }),
          {
            failureThreshold: upstream.breaker.failures,
            coolDownMs: upstream.breaker.coolDownMs,
            clock: app.clock,
            onFault: (error) => app.dependencyHealth.failed('upstream', error),
            onAnswer: () => app.dependencyHealth.succeeded('upstream'),
          },
        )
      : createUnconfiguredUpstreamClient(),
    app.metrics,
  )
  app.decorate('upstream', client)
  app.decorate('upstreamReadThrottle', {
    name: 'upstream-reads',
    max: options.config.upstream.userReadsPerMinute,
    decaySeconds: 60,
    key: (request) => String(request.user?.id),
  } satisfies ThrottleRule)
  app.decorate('upstreamWriteThrottle', {
    name: 'upstream-writes',
    max: options.config.upstream.userWritesPerMinute,
    decaySeconds: 60,
    key: (request) => String(request.user?.id),
  } satisfies ThrottleRule)
  app.addHook('onClose', async () => client.close())
}

export default fp(upstreamPlugin, {
  name: 'upstream',
  dependencies: ['clock', 'metrics', 'dependency-health'],
})
