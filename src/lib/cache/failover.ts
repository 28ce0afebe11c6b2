import type { RedisAvailability } from '../redis/health.ts'
import type { CacheDriver } from './driver.ts'

// Tags invalidated while Redis was away, replayed on its return; past this many, the oldest go (their
// entries in Redis then live out their TTL).
const MAX_PENDING_TAGS = 10_000

/**
 * The shared (Redis) driver while Redis answers, this instance's memory while it does not: reads
 * that miss go to the upstream as on any miss, and what they load is kept here meanwhile. Tags
 * invalidated meanwhile are invalidated in Redis once it is back (its entries may predate those
 * writes), and the memory is emptied then (other instances' writes no longer reach it). `near`
 * holds this instance's copies of untagged entries (keepNear), answered from memory while fresh.
 */
export function createFailoverCacheDriver(
  shared: CacheDriver,
  local: CacheDriver,
  redis: RedisAvailability,
  near: CacheDriver,
): CacheDriver {
  const pendingTags = new Set<string>()
  const pend = (tags: string[]) => {
    for (const tag of tags) {
      pendingTags.delete(tag)
      pendingTags.add(tag)
    }
    for (const tag of pendingTags) {
      if (pendingTags.size <= MAX_PENDING_TAGS) break
      pendingTags.delete(tag)
    }
  }
  redis.onReturn(() => {
    const tags = [...pendingTags]
    pendingTags.clear()
    void local.clear?.()
    if (tags.length > 0) shared.invalidateTags(tags).catch((error: unknown) => redis.failed(error))
  })

  /** `shared` while Redis is up and answers; `fallback()` otherwise. */
  const either = async <T>(fromShared: () => Promise<T>, fallback: () => T | Promise<T>): Promise<T> => {
    if (!redis.isUp()) return fallback()
    try {
      return await fromShared()
    } catch (error) {
      redis.failed(error)
      return fallback()
    }
  }

  return {
    // Copies of untagged entries answer while Redis is up; while it is not, the memory first.
    peek: (key) => (redis.isUp() ? near.peek?.(key) : (local.peek?.(key) ?? near.peek?.(key))),
    keepNear(key, value, freshForMs) {
      if (freshForMs > 0) void near.set(key, value, { ttlSeconds: freshForMs / 1000, staleSeconds: 0 }, [])
    },
    get: (key) =>
      either(
        () => shared.get(key),
        () => local.get(key),
      ),
    set: (key, value, ttlSeconds, tags, versions) =>
      either(
        () => shared.set(key, value, ttlSeconds, tags, versions),
        () => local.set(key, value, ttlSeconds, tags),
      ),
    // While Redis is away, this instance's own single-flight is all there is.
    claimLoad: (key, ms) =>
      either(
        async () => {
          if (!shared.claimLoad) return async () => {}
          const release = await shared.claimLoad(key, ms)
          return release && (() => release().catch((error: unknown) => redis.failed(error)))
        },
        () => async () => {},
      ),
    tagVersions: (tags) =>
      either(
        () => shared.tagVersions?.(tags) ?? Promise.resolve(undefined),
        () => undefined,
      ),
    async invalidateTags(tags) {
      await local.invalidateTags(tags)
      await either(
        () => shared.invalidateTags(tags),
        () => pend(tags),
      )
    },
    onInvalidate: (listener) => shared.onInvalidate?.(listener),
    async clear() {
      await Promise.all([shared.clear?.(), local.clear?.(), near.clear?.()])
    },
    async close() {
      await Promise.all([shared.close(), local.close(), near.close()])
    },
  }
}
