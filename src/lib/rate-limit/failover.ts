import type { RedisAvailability } from '../redis/health.ts'
import type { InProcessRateLimitStore, RateLimitStore } from './store.ts'

/**
 * The shared counters while Redis answers, this instance's memory while it does not: a throttle
 * fails open to counting per instance (N instances then allow up to N times the limit) instead of
 * failing the request. Windows counted in memory stay there; Redis's are used again once it is back.
 */
export function createFailoverRateLimitStore(
  shared: RateLimitStore,
  local: InProcessRateLimitStore,
  redis: Pick<RedisAvailability, 'isUp' | 'failed'>,
): RateLimitStore {
  /** `use(shared)` while Redis is up and answers; `use(local)` otherwise. */
  const either = <T>(use: (store: RateLimitStore) => T | Promise<T>): T | Promise<T> => {
    if (!redis.isUp()) return use(local)
    return Promise.resolve(use(shared)).catch((error: unknown) => {
      redis.failed(error)
      return use(local)
    })
  }
  return {
    hit: (key, decaySeconds) => either((store) => store.hit(key, decaySeconds)),
    peek: async (key) => either((store) => store.peek(key)),
    refund: async (key) => either((store) => store.refund(key)),
    clear: async (key) => either((store) => store.clear(key)),
  }
}
