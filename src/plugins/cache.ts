import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { type Cache, createCache } from '../lib/cache/cache.ts'
import { createFailoverCacheDriver } from '../lib/cache/failover.ts'
import { createMemoryCacheDriver } from '../lib/cache/memory.ts'
import { createRedisCacheDriver } from '../lib/cache/redis.ts'
import { redisAvailability } from '../lib/redis/health.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The one cache: Redis (shared by every instance) when REDIS_URL is set, else an in-process LRU. */
    cache: Cache
  }
}

async function cachePlugin(app: FastifyInstance, { config }: { config: Config }) {
  const memory = createMemoryCacheDriver({ maxBytes: config.cache.maxBytes, clock: app.clock })
  // With Redis, the memory holds entries only while Redis does not answer; the near copies (entries
  // only a TTL ends, read or stored through this instance) are kept beside it, in a second LRU of the same size.
  const redis = app.redis && redisAvailability(app.dependencyHealth, app.log, 'cache')
  const driver =
    app.redis && redis
      ? createFailoverCacheDriver(
          createRedisCacheDriver(app.redis, { onError: redis.failed }),
          memory,
          redis,
          createMemoryCacheDriver({ maxBytes: config.cache.maxBytes, clock: app.clock }),
        )
      : memory
  const layer = { layer: app.redis ? 'redis' : 'memory' }
  const lookups = (name: string, help: string) =>
    app.metrics.counter({ name, help, labelNames: ['layer'] }).series(layer)
  const hits = lookups('cache_hits_total', 'Cache lookups that found the value, by store.')
  const misses = lookups('cache_misses_total', 'Cache lookups that loaded the value, by store.')
  // Grace must never hide an outage: every answer given from an entry past its TTL is counted.
  const staleAnswers = app.metrics.counter({
    name: 'cache_stale_answers_total',
    help: 'Answers given from an entry past its TTL, by reason: why loading it again failed, or revalidating (a load of it was under way).',
    labelNames: ['reason'],
  })
  const cache = createCache(driver, {
    clock: app.clock,
    // Redis failing is the failover driver's (one line per outage); what is left (an unreadable
    // entry) degrades to a miss, logged.
    onError: (error, operation) => app.log.error({ err: error, operation }, 'cache store failed'),
    onRead: (hit) => (hit ? hits : misses).inc(),
    onStale: (reason) => staleAnswers.series({ reason }).inc(),
  })
  app.decorate('cache', cache)
  app.addHook('onClose', async () => cache.close())
}

export default fp(cachePlugin, {
  name: 'cache',
  dependencies: ['clock', 'redis', 'metrics', 'dependency-health'],
})
