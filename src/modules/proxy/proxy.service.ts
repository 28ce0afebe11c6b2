import type { Cache } from '../../lib/cache/cache.ts'
import { ValidationError } from '../../lib/errors.ts'
import { unstorableJson } from '../../lib/json-document.ts'
import type { UpstreamClient } from '../../lib/upstream/client.ts'
import { MAX_FREE_BODY_DEPTH } from './proxy.schemas.ts'

/**
 * Who a cached read is shared with: everyone (market data), its user only (strategies, accounts),
 * or nobody (writes, market balance).
 */
export type CacheScope = 'shared' | 'user' | 'none'

/**
 * A group of one user's cached reads that writes clear at once. `strategies` is UPSTREAM.md's
 * "every cached strategy, strategy search, strategy conditions/activities, condition and signal read".
 */
export type CacheGroup = 'strategies'

/**
 * What the client gets from a successful upstream answer: its `data` member, `{data}` (create and
 * update), the whole `{data, links, meta}` (paginated news), or nothing (204, deletes).
 */
export type AnswerShape = 'data' | 'envelope' | 'paginated' | 'none'

/** The rules of one proxied route, as its route table row declares them. */
export interface ProxyRule {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  cache: CacheScope
  /** For a cached per-user read: the group whose writes clear it. */
  group?: CacheGroup
  /** For a write: the groups of the caller's reads it clears, whether it succeeds or fails. */
  invalidates?: readonly CacheGroup[]
  answer: AnswerShape
}

/** One call as the route hands it over: the upstream path (segments encoded), the validated query, the caller. */
export interface ProxyCall {
  path: string
  query: Record<string, unknown>
  userId: number
  requestId: string
  body?: Record<string, unknown>
}

/** An answer ready to send: the JSON text (undefined for 204) and, for cached reads, whether it was a hit. */
export interface ProxyAnswer {
  body: string | undefined
  cache: 'HIT' | 'MISS' | null
}

/** The query as the upstream and the cache key see it: present values only, sorted by name. */
export function canonicalQuery(query: Record<string, unknown>): string {
  return Object.keys(query)
    .filter((key) => query[key] !== undefined && query[key] !== null)
    .sort()
    .map((key) => `${encodeURIComponent(key)}=${encodeURIComponent(String(query[key]))}`)
    .join('&')
}

const groupTag = (userId: number, group: CacheGroup) => `user:${userId}:${group}`

/** Shared keys name the path and query only; per-user keys start with the user, so no one else can hit them. */
export function cacheKey(scope: 'shared' | 'user', path: string, query: string, userId: number): string {
  const target = query ? `${path}?${query}` : path
  return scope === 'shared' ? `proxy:shared:${target}` : `proxy:user:${userId}:${target}`
}

function shape(answer: AnswerShape, body: { data: unknown }): string | undefined {
  switch (answer) {
    case 'data':
      return JSON.stringify(body.data ?? null)
    case 'envelope':
      return JSON.stringify({ data: body.data ?? null })
    case 'paginated':
      return JSON.stringify(body)
    case 'none':
      return undefined
  }
}

/**
 * The caching proxy to the upstream trading-data API: reads through the cache with the key and
 * tags their scope asks for, writes straight through, clearing the caller's related reads.
 */
export function createProxyService({
  upstream,
  cache,
  ttlSeconds,
}: {
  upstream: UpstreamClient
  cache: Cache
  ttlSeconds: number
}) {
  return {
    /** A GET: from the cache when its scope allows (single-flight on a miss), else from the upstream. */
    async read(rule: ProxyRule, call: ProxyCall): Promise<ProxyAnswer> {
      const query = canonicalQuery(call.query)
      const load = async () => {
        const res = await upstream.request({
          method: 'GET',
          path: call.path,
          query,
          userId: call.userId,
          requestId: call.requestId,
        })
        return shape(rule.answer, res.body) ?? 'null'
      }
      if (rule.cache === 'none') return { body: await load(), cache: null }
      const key = cacheKey(rule.cache, call.path, query, call.userId)
      const tags = rule.cache === 'user' && rule.group ? [groupTag(call.userId, rule.group)] : []
      // A failed fetch throws through remember(), so nothing is stored for it.
      const { value, hit } = await cache.remember(key, { ttlSeconds, tags }, load)
      return { body: value as string, cache: hit ? 'HIT' : 'MISS' }
    },

    /**
     * A POST, PUT or DELETE, never cached. The caller's related reads are cleared whatever the
     * upstream answered: a failed write may still have changed something there.
     */
    async write(rule: ProxyRule, call: ProxyCall): Promise<ProxyAnswer> {
      let body: Record<string, unknown> | undefined
      if (call.body !== undefined) {
        // `_token` is the CSRF field of a form post, meant for this service, not the upstream.
        const { _token, ...rest } = call.body
        const problem = unstorableJson(rest, MAX_FREE_BODY_DEPTH)
        if (problem) throw ValidationError.withMessages({ body: [`The body field ${problem}`] })
        body = rest
      }
      try {
        const res = await upstream.request({
          method: rule.method,
          path: call.path,
          query: canonicalQuery(call.query),
          body,
          userId: call.userId,
          requestId: call.requestId,
        })
        return { body: shape(rule.answer, res.body), cache: null }
      } finally {
        const groups = rule.invalidates ?? []
        if (groups.length > 0) await cache.invalidateTags(groups.map((group) => groupTag(call.userId, group)))
      }
    },
  }
}

export type ProxyService = ReturnType<typeof createProxyService>
