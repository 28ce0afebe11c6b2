import type { TObject } from 'typebox'
import type { Cache } from '../../lib/cache/cache.ts'
import { ValidationError } from '../../lib/errors.ts'
import { unstorableJson } from '../../lib/json-document.ts'
import { type UpstreamClient, type UpstreamResponse, upstreamFaultOf } from '../../lib/upstream/client.ts'
import { CACHE_STATUS_HIT, cacheStatus } from './cache-status.ts'
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
  /** The API path as Fastify registers it (`/api/strategies/:id`); a paginated list's links name it. */
  url: string
  /** The query the route takes; a paginated list's links keep these parameters and no others. */
  querystring?: TObject
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

/**
 * An answer ready to send: the JSON text (undefined for 204) and, for cached reads, how the cache
 * answered: X-Cache (HIT, MISS, or STALE for an old answer given because the upstream failed) and
 * the RFC 9211 Cache-Status saying the same in full.
 */
export interface ProxyAnswer {
  body: string | undefined
  cache: 'HIT' | 'MISS' | 'STALE' | null
  cacheStatus?: string
}

/** A fresh entry this close to its TTL's end (this share of it) is refreshed in the background. */
const REFRESH_AHEAD_SHARE = 0.2

/** The query as the upstream and the cache key see it: present values only, sorted by name. */
export function canonicalQuery(query: Record<string, unknown>): string {
  const names = Object.keys(query)
  if (names.length === 0) return ''
  return names
    .filter((key) => query[key] !== undefined && query[key] !== null)
    .sort()
    .map((key) => `${encodeURIComponent(key)}=${encodeURIComponent(String(query[key]))}`)
    .join('&')
}

const groupTag = (userId: number, group: CacheGroup) => `user:${userId}:${group}`

/**
 * Entries hold the answer's JSON text as it is sent (`v2`; `proxy:` entries held that text JSON-encoded
 * again): a new prefix, so that during a rolling deploy no instance reads the other format.
 */
const KEY_PREFIX = 'proxy:v2'

/** Shared keys name the path and query only; per-user keys start with the user, so no one else can hit them. */
export function cacheKey(scope: 'shared' | 'user', path: string, query: string, userId: number): string {
  const target = query ? `${path}?${query}` : path
  return scope === 'shared' ? `${KEY_PREFIX}:shared:${target}` : `${KEY_PREFIX}:user:${userId}:${target}`
}

/**
 * A link of an upstream page, as a link to the same page of this API: `listUrl` (APP_URL and the
 * route's path) with the link's own query, keeping only the parameters the route takes. Never the
 * upstream's host, path or anything else it added; what is not a URL is no link (null).
 */
function pageLink(link: unknown, listUrl: string, keep: ReadonlySet<string>): string | null {
  // Absolute (any host: it is replaced), or relative to the upstream's host; anything else is no link.
  if (typeof link !== 'string' || !/^([a-z][a-z0-9+.-]*:\/\/|\/|\?)/i.test(link)) return null
  let parsed: URL
  try {
    parsed = new URL(link, 'http://upstream.invalid')
  } catch {
    return null
  }
  const query = new URLSearchParams()
  for (const [key, value] of parsed.searchParams) if (keep.has(key)) query.append(key, value)
  const text = query.toString()
  return text ? `${listUrl}?${text}` : listUrl
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)

// An absolute or scheme-relative URL: wherever it points, the client must not be sent there.
const looksLikeUrl = (value: unknown) =>
  typeof value === 'string' && /^([a-z][a-z0-9+.-]*:)?\/\//i.test(value)

/**
 * A Laravel resource collection `{data, links, meta}` from the upstream, its URLs pointing at this
 * API instead: every member of `links`, `meta.path`, each `meta.links[].url` and any other URL in
 * `meta`. Nothing else the upstream added beside those three members is passed on.
 */
function rewritePage(body: Record<string, unknown>, listUrl: string, keep: ReadonlySet<string>) {
  const link = (value: unknown) => pageLink(value, listUrl, keep)
  const links = isRecord(body.links)
    ? Object.fromEntries(Object.entries(body.links).map(([key, value]) => [key, link(value)]))
    : null
  const anyUrl = (value: unknown) => (looksLikeUrl(value) ? link(value) : value)
  // `{url, label, page, active}`: its url is a link even when relative; any other URL member too.
  const pageEntry = (item: unknown) =>
    isRecord(item)
      ? Object.fromEntries(
          Object.entries(item).map(([key, value]) => [key, key === 'url' ? link(value) : anyUrl(value)]),
        )
      : anyUrl(item)
  const metaMember = ([key, value]: [string, unknown]): [string, unknown] => {
    if (key === 'path') return [key, listUrl]
    if (key === 'links' && Array.isArray(value)) return [key, value.map(pageEntry)]
    return [key, anyUrl(value)]
  }
  const meta = isRecord(body.meta) ? Object.fromEntries(Object.entries(body.meta).map(metaMember)) : null
  return { data: body.data, links, meta }
}

/** The answer's JSON text for a successful upstream body (undefined for 204). */
function shape(rule: ProxyRule, body: UpstreamResponse['body'], appUrl: string): string | undefined {
  switch (rule.answer) {
    case 'data':
      return JSON.stringify(body.data ?? null)
    case 'envelope':
      return JSON.stringify({ data: body.data ?? null })
    case 'paginated': {
      const keep = new Set(Object.keys(rule.querystring?.properties ?? {}))
      return JSON.stringify(rewritePage(body, `${appUrl}${rule.url}`, keep))
    }
    case 'none':
      return undefined
  }
}

/**
 * The caching proxy to the upstream trading-data API: reads through the cache with the key and
 * tags their scope asks for (stale within grace when the upstream fails, refreshed in the background
 * near expiry), writes straight through (never from the cache), clearing the caller's related reads.
 */
export function createProxyService({
  upstream,
  cache,
  lifetime,
  upstreamTimeoutMs,
  appUrl,
}: {
  upstream: UpstreamClient
  cache: Cache
  /** CACHE_TTL_SECONDS, and CACHE_STALE_SECONDS: how long past it an entry answers when the upstream fails. */
  lifetime: { ttlSeconds: number; staleSeconds: number }
  /** UPSTREAM_TIMEOUT_MS: the longest a load takes, so the longest an entry is answered stale while one runs. */
  upstreamTimeoutMs: number
  /** APP_URL: paginated answers' links name this service, never the upstream. */
  appUrl: string
}) {
  const { ttlSeconds, staleSeconds } = lifetime
  const refreshAhead = { refreshAheadSeconds: ttlSeconds * REFRESH_AHEAD_SHARE }
  const service = {
    /** A route's call: a read for a GET, a write otherwise. A read held in memory is answered at once. */
    call(rule: ProxyRule, call: ProxyCall): ProxyAnswer | Promise<ProxyAnswer> {
      return rule.method === 'GET' ? service.read(rule, call) : service.write(rule, call)
    },

    /**
     * The warm-read lane's lookup for `path` with no query: the answer this process holds for a
     * user, else undefined (nothing is loaded); the same entry `read` would answer. A shared key is
     * made once.
     */
    inMemoryReader(rule: ProxyRule, path: string): (userId: number) => string | undefined {
      const { cache: scope } = rule
      if (scope === 'none') return () => undefined
      if (scope === 'user')
        return (userId) => cache.jsonInMemory(cacheKey(scope, path, '', userId), refreshAhead)
      const key = cacheKey(scope, path, '', 0)
      return () => cache.jsonInMemory(key, refreshAhead)
    },

    /**
     * A GET: from the cache when its scope allows (single-flight on a miss), else from the upstream.
     * An entry this process holds is answered without a promise: the warm read is the hot path.
     */
    read(rule: ProxyRule, call: ProxyCall): ProxyAnswer | Promise<ProxyAnswer> {
      const query = canonicalQuery(call.query)
      const key = rule.cache === 'none' ? undefined : cacheKey(rule.cache, call.path, query, call.userId)
      const inMemory = key === undefined ? undefined : cache.jsonInMemory(key, refreshAhead)
      if (inMemory !== undefined) return { body: inMemory, cache: 'HIT', cacheStatus: CACHE_STATUS_HIT }
      const load = async () => {
        const res = await upstream.request({
          method: 'GET',
          path: call.path,
          query,
          userId: call.userId,
          requestId: call.requestId,
        })
        return shape(rule, res.body, appUrl) ?? 'null'
      }
      if (key === undefined) return load().then((body) => ({ body, cache: null }))
      const tags = rule.cache === 'user' && rule.group ? [groupTag(call.userId, rule.group)] : []
      // Stored as the text it is sent as: a hit costs no parse and no serialising. A failed fetch
      // throws through rememberJson(), so nothing is stored for it; when the upstream itself failed
      // (down, slow, 5xx, breaker open), an entry within its grace answers instead, as it does for
      // any reader while a load of the key runs (for at most the upstream's time-out).
      const remember = {
        ttlSeconds,
        staleSeconds,
        tags,
        staleIf: upstreamFaultOf,
        maxLoadMs: upstreamTimeoutMs,
        ...refreshAhead,
      }
      return cache.rememberJson(key, remember, load).then(
        (answer): ProxyAnswer => ({
          body: answer.value,
          cache: answer.hit ? 'HIT' : answer.stale ? 'STALE' : 'MISS',
          cacheStatus: cacheStatus(answer),
        }),
      )
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
        return { body: shape(rule, res.body, appUrl), cache: null }
      } finally {
        const groups = rule.invalidates ?? []
        if (groups.length > 0) await cache.invalidateTags(groups.map((group) => groupTag(call.userId, group)))
      }
    },
  }
  return service
}

export type ProxyService = ReturnType<typeof createProxyService>
