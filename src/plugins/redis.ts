import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    /** Set when REDIS_URL is: state shared by every instance (rate limits, cache, fan-out). */
    redis: Redis | null
  }
}

async function redisPlugin(app: FastifyInstance, { redis }: { redis: Redis | null }) {
  app.decorate('redis', redis)
  if (redis) app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())))
}

export default fp(redisPlugin, { name: 'redis' })
