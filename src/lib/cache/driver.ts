/**
 * Where cached JSON lives: in this process (memory.ts) or shared by every instance (redis.ts). Each
 * driver tells freshness by its own time (the injected clock in memory, Redis's own in Redis), so
 * instances whose clocks differ still agree on when a shared entry expires.
 */
export interface CacheDriver {
  /** The entry, fresh or kept past its TTL for stale answers; undefined once it is gone. */
  get(key: string): Promise<StoredEntry | undefined>
  /** `get` without waiting, for a driver that holds its entries in this process (a hit skips the flight). */
  peek?(key: string): StoredEntry<string> | undefined
  /**
   * For a driver shared by several instances: keeps a copy of an entry stored without tags in this
   * process, for `peek`, while it stays fresh. Only a TTL ends such an entry (invalidation goes by
   * tags), so every instance may answer it from memory until then.
   */
  keepNear?(key: string, value: string, freshForMs: number): void
  /**
   * Stores value, fresh for `ttlSeconds` and kept `staleSeconds` longer, under tags. With `versions`
   * (from tagVersions, taken before the value was computed) a driver shared by several instances
   * skips the write when a tag was invalidated meanwhile, so an answer read before another
   * instance's write is never stored after it.
   */
  set(key: string, value: string, lifetime: EntryLifetime, tags: string[], versions?: unknown): Promise<void>
  /**
   * For a driver shared by several instances: claims the one load of key across them for `ms` (a
   * claim whose instance died lapses then), answering how to give it back once the load has landed;
   * undefined when a load elsewhere holds it. Reads of the entry meanwhile say `loading`.
   */
  claimLoad?(key: string, ms: number): Promise<(() => Promise<void>) | undefined>
  /** Drops every entry stored under any of these tags (their stale copies too), for every instance sharing the store. */
  invalidateTags(tags: string[]): Promise<void>
  /** Snapshot of the tags' invalidation counters, for `set` (shared drivers only). */
  tagVersions?(tags: string[]): Promise<unknown>
  /** Registers a listener for invalidations made through any instance sharing the store (this one included). */
  onInvalidate?(listener: (tags: string[]) => void): void
  clear?(): Promise<void>
  close(): Promise<void>
}

/** An entry as a driver holds it: the text, and how long it stays fresh (negative once past its TTL). */
export interface StoredEntry<V = Buffer | string> {
  value: V
  freshForMs: number
  /** A driver shared by several instances: a load of the key holds its claim (claimLoad) on one of them. */
  loading?: boolean
}

/** How long an entry is fresh, and how much longer it is kept for stale answers (see RememberOptions). */
export interface EntryLifetime {
  ttlSeconds: number
  staleSeconds: number
}

/** Told about a failing store operation (the cache then behaves as a miss, so answers still come). */
export type ReportStoreFailure = (error: unknown, operation: 'get' | 'set' | 'invalidate') => void
