import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { defineScript } from '../redis/script.ts'
import { type ChannelSubscription, subscribeToChannel } from '../redis/subscription.ts'
import type { CacheDriver } from './driver.ts'

// KEYS: entry, tag sets (n), tag versions (n). ARGV: value, keeping time ms (TTL + stale), n, then the n versions seen
// before the value was computed ('' = unknown: store anyway). A version that moved means a tag was
// invalidated meanwhile (on any instance): the value may predate that write, so it is not stored.
const SET_SCRIPT = `
local n = tonumber(ARGV[3])
if ARGV[4] ~= nil and ARGV[4] ~= '' then
  for i = 1, n do
    local current = redis.call('GET', KEYS[1 + n + i]) or '0'
    if current ~= ARGV[3 + i] then return 0 end
  end
end
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
for i = 1, n do
  redis.call('SADD', KEYS[1 + i], KEYS[1])
  local left = redis.call('PTTL', KEYS[1 + i])
  if left < ttl then redis.call('PEXPIRE', KEYS[1 + i], ttl) end
end
return 1`

// KEYS: tag sets (n), tag versions (n). ARGV: n, channel, message. Deletes every tagged entry, bumps
// the versions (kept a day: far longer than any upstream call) and tells every instance.
const INVALIDATE_SCRIPT = `
local n = tonumber(ARGV[1])
for i = 1, n do
  local members = redis.call('SMEMBERS', KEYS[i])
  for j = 1, #members, 500 do
    redis.call('DEL', unpack(members, j, math.min(j + 499, #members)))
  end
  redis.call('DEL', KEYS[i])
  redis.call('INCR', KEYS[n + i])
  redis.call('PEXPIRE', KEYS[n + i], 86400000)
end
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`

// KEYS: a load's claim. ARGV: the token it was taken with. Gives it back only if still this one's
// (one that lapsed may have been taken by another instance since).
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

/**
 * The cache in Redis, shared by every instance: entries with PX expiry (TTL + stale time), each
 * value after a header line giving its stale time, so freshness is `PTTL - stale` in Redis's own
 * time, the same for every instance; one set of entry keys per tag, and a pub/sub channel announcing invalidations so each instance's single-flight follows.
 * A load of a key claims it (`l:` keys, SET NX PX), so one instance at a time calls the upstream
 * for an entry held; each read of the entry says whether such a claim is held.
 * The client's keyPrefix (if any) applies to every key and to the channel. The scripts touch keys
 * read from the tag sets, which a standalone Redis (not Cluster) allows. A tag set may still name a
 * key since overwritten under other tags; invalidating it then costs that key one extra miss.
 */
export function createRedisCacheDriver(
  redis: Redis,
  options: { namespace?: string; onError?: (error: unknown) => void } = {},
): CacheDriver {
  const ns = options.namespace ?? 'cache'
  // `e:` entries carry the header; the `v:` entries of older versions, without it, are never read.
  const entryKey = (key: string) => `${ns}:e:${key}`
  const tagKeys = (tags: string[]) => tags.map((tag) => `${ns}:t:${tag}`)
  const versionKeys = (tags: string[]) => tags.map((tag) => `${ns}:tv:${tag}`)
  const claimKey = (key: string) => `${ns}:l:${key}`
  // Pub/sub channels are not prefixed by ioredis: add the prefix so separate key spaces stay separate.
  const channel = `${redis.options.keyPrefix ?? ''}${ns}:invalidated`
  const listeners: ((tags: string[]) => void)[] = []
  // This instance's own announcements come back too; its cache already acted on them, and acting
  // again would needlessly drop loads that started after the invalidation.
  const instanceId = randomUUID()
  let subscription: ChannelSubscription | undefined
  const setScript = defineScript(redis, 'cacheSet', SET_SCRIPT)
  const invalidateScript = defineScript(redis, 'cacheInvalidate', INVALIDATE_SCRIPT)
  const releaseScript = defineScript(redis, 'cacheRelease', RELEASE_SCRIPT)

  return {
    async get(key) {
      const results = await redis
        .pipeline()
        .getBuffer(entryKey(key))
        .pttl(entryKey(key))
        .exists(claimKey(key))
        .exec()
      const [[getError, stored] = [], [ttlError, pttl] = [], [claimError, claimed] = []] = results ?? []
      if (getError || ttlError || claimError) throw getError ?? ttlError ?? claimError
      if (!(stored instanceof Buffer) || typeof pttl !== 'number' || pttl === -2) return undefined
      const entry = readEntry(stored, pttl)
      return entry && claimed === 1 ? { ...entry, loading: true } : entry
    },

    async claimLoad(key, ms) {
      const token = `${instanceId}:${randomUUID()}`
      const taken = await redis.set(claimKey(key), token, 'PX', Math.max(1, Math.round(ms)), 'NX')
      if (taken !== 'OK') return undefined
      return async () => {
        await releaseScript([claimKey(key)], [token])
      }
    },

    async set(key, value, { ttlSeconds, staleSeconds }, tags, versions) {
      const staleMs = Math.max(0, Math.round(staleSeconds * 1000))
      const seen = Array.isArray(versions) && versions.length === tags.length ? (versions as string[]) : []
      await setScript(
        [entryKey(key), ...tagKeys(tags), ...versionKeys(tags)],
        [`${staleMs}\n${value}`, Math.max(1, Math.round(ttlSeconds * 1000)) + staleMs, tags.length, ...seen],
      )
    },

    async tagVersions(tags) {
      const values = await redis.mget(...versionKeys(tags))
      return values.map((value) => value ?? '0')
    },

    async invalidateTags(tags) {
      if (tags.length === 0) return
      await invalidateScript(
        [...tagKeys(tags), ...versionKeys(tags)],
        [tags.length, channel, JSON.stringify({ from: instanceId, tags })],
      )
    },

    onInvalidate(listener) {
      listeners.push(listener)
      if (subscription) return
      subscription = subscribeToChannel(
        redis,
        channel,
        (message) => {
          let announced: { from?: unknown; tags?: unknown }
          try {
            announced = JSON.parse(message)
          } catch {
            return
          }
          const { from, tags } = announced
          if (from === instanceId || !Array.isArray(tags)) return
          for (const notify of listeners) notify(tags.filter((tag) => typeof tag === 'string'))
        },
        options.onError ?? (() => {}),
      )
    },

    async clear() {
      // Only for tests and tools: walks this namespace's keys without blocking Redis.
      const prefix = redis.options.keyPrefix ?? ''
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}${ns}:*`, 'COUNT', 500)
        cursor = next
        if (keys.length > 0) await redis.del(...keys.map((key) => key.slice(prefix.length)))
      } while (cursor !== '0')
    },

    async close() {
      // The shared client belongs to the redis plugin; only the subscription is ours.
      await subscription?.close()
    },
  }
}

/** `<stale ms>\n<value>` as an entry: fresh for what is left of its keeping time beyond the stale time. */
function readEntry(stored: Buffer, pttl: number) {
  const newline = stored.indexOf(10)
  const staleMs = newline > 0 ? Number(stored.toString('latin1', 0, newline)) : Number.NaN
  if (!Number.isFinite(staleMs)) return undefined // not an entry this version wrote: a miss
  // -1 (no expiry) is never written; read it as fresh rather than as gone.
  const freshForMs = pttl < 0 ? Number.POSITIVE_INFINITY : pttl - staleMs
  return { value: stored.subarray(newline + 1), freshForMs }
}
