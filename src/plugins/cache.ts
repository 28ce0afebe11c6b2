import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import { type Cache, createCache } from '../lib/cache/cache.ts'
import { createMemoryCacheDriver } from '../lib/cache/memory.ts'
import { createRedisCacheDriver } from '../lib/cache/redis.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The one cache: Redis (shared by every instance) when REDIS_URL is set, else an in-process LRU. */
    cache: Cache
  }
}

async function cachePlugin(app: FastifyInstance, { config }: { config: Config }) {
  const driver = app.redis
    ? createRedisCacheDriver(app.redis)
    : createMemoryCacheDriver({ maxBytes: config.cache.maxBytes, clock: app.clock })
  const layer = { layer: app.redis ? 'redis' : 'memory' }
  const lookups = (name: string, help: string) =>
    app.metrics.counter({ name, help, labelNames: ['layer'] }).series(layer)
  const hits = lookups('cache_hits_total', 'Cache lookups that found the value, by store.')
  const misses = lookups('cache_misses_total', 'Cache lookups that loaded the value, by store.')
  // Grace must never hide an outage: every answer given from an entry past its TTL is counted.
  const staleAnswers = app.metrics.counter({
    name: 'cache_stale_answers_total',
    help: 'Answers given from an entry past its TTL because loading it again failed, by reason.',
    labelNames: ['reason'],
  })
  const cache = createCache(driver, {
    // A failing store degrades to misses (answers still come from the upstream); say so in the log.
    onError: (error, operation) => app.log.error({ err: error, operation }, 'cache store failed'),
    onRead: (hit) => (hit ? hits : misses).inc(),
    onStale: (reason) => staleAnswers.series({ reason }).inc(),
  })
  app.decorate('cache', cache)
  app.addHook('onClose', async () => cache.close())
}

export default fp(cachePlugin, { name: 'cache', dependencies: ['clock', 'redis', 'metrics'] })
