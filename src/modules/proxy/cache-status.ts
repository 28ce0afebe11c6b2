import { REVALIDATING, type Remembered } from '../../lib/cache/remembered.ts'
import { UpstreamError } from '../../lib/upstream/client.ts'

/** This cache's name in Cache-Status (RFC 9211); a cache in front (a CDN) adds its own member after it. */
const CACHE_NAME = 'trading-api'

/** A fresh hit, as both the route and the warm-read lane answer it. */
export const CACHE_STATUS_HIT = `${CACHE_NAME}; hit`

/**
 * The RFC 9211 Cache-Status of a cached read: `hit` when the request went no further (a fresh
 * entry; or, past its TTL, a stale one while the breaker is open or while a load of it runs: `ttl`
 * negative, `detail=circuit-open` or `detail=stale-while-revalidate`), `fwd=uri-miss` for a key not
 * held, `fwd=stale` for an entry past its TTL sent on to the upstream; when that failed and the old
 * answer was given, `fwd-status` (if the upstream answered at all), its negative `ttl` and
 * `detail=stale-if-error` say so.
 */
export function cacheStatus(answer: Remembered<unknown>): string {
  if (answer.hit) return CACHE_STATUS_HIT
  if (answer.expired) return `${CACHE_NAME}; fwd=stale`
  if (!answer.stale) return `${CACHE_NAME}; fwd=uri-miss`
  const { error, expiredMs, reason } = answer.stale
  const ttl = `ttl=${-Math.max(1, Math.ceil(expiredMs / 1000))}`
  if (reason === REVALIDATING) return `${CACHE_NAME}; hit; ${ttl}; detail=stale-while-revalidate`
  if (error instanceof UpstreamError && error.kind === 'circuit-open') {
    return `${CACHE_NAME}; hit; ${ttl}; detail=circuit-open`
  }
  const status =
    error instanceof UpstreamError && error.upstreamStatus ? `; fwd-status=${error.upstreamStatus}` : ''
  return `${CACHE_NAME}; fwd=stale${status}; ${ttl}; detail=stale-if-error`
}
