import type { Redis } from 'ioredis'
import { type Clock, unixSeconds } from '../clock.ts'
import { defineScript } from '../redis/script.ts'
import type { RateLimitStore } from './store.ts'

// INCR and EXPIRE in one step, so every instance shares one window per key.
const HIT_SCRIPT = `
local attempts = redis.call('INCR', KEYS[1])
local ttl = redis.call('TTL', KEYS[1])
if ttl < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {attempts, ttl}`

// The count and what is left of its window, read together.
const PEEK_SCRIPT = `
local attempts = redis.call('GET', KEYS[1])
if not attempts then return false end
return {tonumber(attempts), redis.call('TTL', KEYS[1])}`

// A window that has passed stays gone; one at 0 stays at 0.
const REFUND_SCRIPT = `
local attempts = tonumber(redis.call('GET', KEYS[1]) or '0')
if attempts > 0 then redis.call('DECR', KEYS[1]) end
return attempts`

/** Counters in Redis, shared by every instance behind the load balancer. */
export function createRedisRateLimitStore(redis: Redis, clock: Clock): RateLimitStore {
  const redisKey = (key: string) => `ratelimit:${key}`
  const hitScript = defineScript(redis, 'rateLimitHit', HIT_SCRIPT)
  const peekScript = defineScript(redis, 'rateLimitPeek', PEEK_SCRIPT)
  const refundScript = defineScript(redis, 'rateLimitRefund', REFUND_SCRIPT)
  return {
    async hit(key, decaySeconds) {
      const [attempts, ttl] = (await hitScript([redisKey(key)], [decaySeconds])) as [number, number]
      return { attempts, resetAt: unixSeconds(clock) + ttl }
    },
    async peek(key) {
      const found = (await peekScript([redisKey(key)])) as [number, number] | null
      if (!found) return null
      const [attempts, ttl] = found
      return { attempts, resetAt: unixSeconds(clock) + Math.max(ttl, 0) }
    },
    async refund(key) {
      await refundScript([redisKey(key)])
    },
    async clear(key) {
      await redis.del(redisKey(key))
    },
  }
}
