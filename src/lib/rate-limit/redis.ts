import type { Redis } from 'ioredis'
import { type Clock, unixSeconds } from '../clock.ts'
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

/** Counters in Redis, shared by every instance behind the load balancer. */
export function createRedisRateLimitStore(redis: Redis, clock: Clock): RateLimitStore {
  return {
    async hit(key, decaySeconds) {
      const [attempts, ttl] = (await redis.eval(HIT_SCRIPT, 1, `ratelimit:${key}`, decaySeconds)) as [
        number,
        number,
      ]
      return { attempts, resetAt: unixSeconds(clock) + ttl }
    },
    async clear(key) {
      await redis.del(`ratelimit:${key}`)
    },
  }
}
