/** What a caller asks of remember() and rememberJson(). */
export interface RememberOptions {
  ttlSeconds: number
  tags?: string[]
  /**
   * Grace (nginx's proxy_cache_use_stale, Varnish's grace): the entry is kept this long past its TTL,
   * and a load of it then that fails with an error `staleIf` accepts answers the old value instead.
   */
  staleSeconds?: number
  /** Why a failed load may be answered stale (a short label, for the metric); undefined: it may not. */
  staleIf?: (error: unknown) => string | undefined
  /**
   * Refresh-ahead: a hit with less freshness than this left starts one background load of the key
   * and is answered at once, so a popular key is loaded again before its TTL ends.
   */
  refreshAheadSeconds?: number
  /**
   * The longest fn takes (its own time-out; default 30 s). While a load of the key runs, for no
   * longer than this, a read finding the entry past its TTL (kept for staleSeconds) is answered the
   * old value at once instead of waiting for that load or calling fn again (stale-while-revalidate:
   * Varnish's grace, nginx's `proxy_cache_use_stale updating`). Past it the load is given up on, and
   * the next read may start another.
   */
  maxLoadMs?: number
}

/** What remember() answered, and how: what an RFC 9211 Cache-Status tells. */
export interface Remembered<T> {
  value: T
  /** Fresh from the store: fn was not called. */
  hit: boolean
  /** The store held the key past its TTL: fn was called for a new value. */
  expired?: true
  /** fn failed, and the value kept past its TTL is answered instead. */
  stale?: StaleAnswer
}

export interface StaleAnswer {
  /** The failure of the load (the answer's cause, for the caller to tell); none for REVALIDATING. */
  error?: unknown
  /** staleIf's label for the failure, or REVALIDATING. */
  reason: string
  /** How long the value had been past its TTL. */
  expiredMs: number
}

/** The reason of a stale answer given because a load of the key was under way (no failure). */
export const REVALIDATING = 'revalidating'
