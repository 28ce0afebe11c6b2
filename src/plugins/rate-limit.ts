import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { unixSeconds } from '../lib/clock.ts'
import { tooManyAttempts } from '../lib/errors.ts'
import { createMemoryRateLimitStore } from '../lib/rate-limit/memory.ts'
import { createRedisRateLimitStore } from '../lib/rate-limit/redis.ts'
import type { ThrottleRule } from './guards.ts'

export interface RateLimiter {
  /** Counts the attempt; past the limit throws Laravel's 429, otherwise sets the X-RateLimit headers. */
  enforce(rule: ThrottleRule, request: FastifyRequest, reply: FastifyReply): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimiter: RateLimiter
  }
}

async function rateLimitPlugin(app: FastifyInstance) {
  const store = app.redis
    ? createRedisRateLimitStore(app.redis, app.clock)
    : createMemoryRateLimitStore(app.clock)

  app.decorate('rateLimiter', {
    async enforce(rule, request, reply) {
      // Keys hold emails and addresses: hashed, they are short and reveal nothing in Redis.
      const key = `${rule.name}:${createHash('sha1').update(rule.key(request)).digest('hex')}`
      const { attempts, resetAt } = await store.hit(key, rule.decaySeconds)
      if (attempts > rule.max) {
        throw tooManyAttempts({
          'retry-after': String(Math.max(1, resetAt - unixSeconds(app.clock))),
          'x-ratelimit-limit': String(rule.max),
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(resetAt),
        })
      }
      reply.header('x-ratelimit-limit', String(rule.max))
      reply.header('x-ratelimit-remaining', String(rule.max - attempts))
    },
  } satisfies RateLimiter)
}

export default fp(rateLimitPlugin, { name: 'rate-limit', dependencies: ['clock', 'redis'] })
