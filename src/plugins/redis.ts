import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../config.ts'
import { createRedisClient } from '../lib/redis/client.ts'
import { firstConnection, watchRedisHealth } from '../lib/redis/health.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when REDIS_URL is: state shared by every instance (rate limits, cache, fan-out). */
    redis: Redis | null
  }
}

interface RedisPluginOptions {
  /** A client handed in (tests), or null for none; undefined: the one REDIS_URL names, if any. */
  redis: Redis | null | undefined
  config: Config
}

async function redisPlugin(app: FastifyInstance, { redis: given, config }: RedisPluginOptions) {
  const redis =
    given !== undefined
      ? given
      : config.redisUrl
        ? createRedisClient(config.redisUrl, {
            keyPrefix: config.redisPrefix,
            commandTimeoutMs: config.redisCommandTimeoutMs,
          })
        : null
  app.decorate('redis', redis)
  if (!redis) return
  const stopWatching = watchRedisHealth(redis, app.dependencyHealth)
  // Commands are refused until connected: wait for that (or for the first failure, then start
  // without Redis, which is reported down and comes back by itself).
  await firstConnection(redis)
  app.addHook('onClose', async () => {
    stopWatching()
    await redis.quit().catch(() => redis.disconnect())
  })
}

export default fp(redisPlugin, { name: 'redis', dependencies: ['dependency-health'] })
