/** An entry as a driver holds it: the text, and how long it stays fresh (negative once past its TTL). */
export interface StoredEntry<V = Buffer | string> {
  value: V
  freshForMs: number
}

/** How long an entry is fresh, and how much longer it is kept for stale answers (see RememberOptions). */
export interface EntryLifetime {
  ttlSeconds: number
  staleSeconds: number
}

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
  /** Drops every entry stored under any of these tags (their stale copies too), for every instance sharing the store. */
  invalidateTags(tags: string[]): Promise<void>
  /** Snapshot of the tags' invalidation counters, for `set` (shared drivers only). */
  tagVersions?(tags: string[]): Promise<unknown>
  /** Registers a listener for invalidations made through any instance sharing the store (this one included). */
  onInvalidate?(listener: (tags: string[]) => void): void
  clear?(): Promise<void>
  close(): Promise<void>
}

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
   * Stale-while-revalidate: a hit with less freshness than this left starts one background load of
   * the key (per process) and is answered at once, so a popular key never makes a reader wait.
   */
  refreshAheadSeconds?: number
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
  /** The failure of the load (the answer's cause, for the caller to tell). */
  error: unknown
  /** staleIf's label for it. */
  reason: string
  /** How long the value had been past its TTL. */
  expiredMs: number
}

export interface Cache {
  /**
   * The cached value for key or, on a miss, fn's result stored for ttlSeconds under tags. Concurrent
   * misses for one key in this process share ONE fn call (single-flight). A rejected fn is never cached.
   * Values must be JSON data; callers sharing one flight get the same object, so treat it as read-only.
   */
  remember<T>(key: string, options: RememberOptions, fn: () => Promise<T>): Promise<Remembered<T>>
  /**
   * remember() for a value that already is JSON text (an answer about to be sent as is): stored and
   * returned unchanged, so a hit costs no parse and no second serialization.
   */
  rememberJson(key: string, options: RememberOptions, fn: () => Promise<string>): Promise<Remembered<string>>
  /**
   * The JSON text rememberJson() would answer as a hit, when this process holds it in memory, fresh
   * (and no load of the key is under way, nor a refresh due): a warm read answered without a
   * promise. Undefined otherwise, and then rememberJson() is the way.
   */
  jsonInMemory(key: string, options?: Pick<RememberOptions, 'refreshAheadSeconds'>): string | undefined
  /** Drops every entry stored under any of these tags, on every instance sharing the driver. */
  invalidateTags(tags: string[]): Promise<void>
  close(): Promise<void>
}

export interface CacheOptions {
  /** Told about a failing store (the cache then behaves as a miss, so answers still come). */
  onError?: (error: unknown, operation: 'get' | 'set' | 'invalidate') => void
  /**
   * Told of each lookup in the store: a hit, or a miss (the value is then loaded). A caller joining
   * a load under way makes no lookup of its own, so misses count the loads.
   */
  onRead?: (hit: boolean) => void
  /** Told of each answer given stale, with staleIf's reason (joiners of a flight each count). */
  onStale?: (reason: string) => void
}

interface Flight {
  tags: readonly string[]
  /**
   * Set when one of its tags was invalidated while it ran: its result is answered but not stored,
   * and its failure is never answered from the entry read before the invalidation.
   */
  invalidated: boolean
}

interface Load extends Flight {
  promise: Promise<Remembered<unknown>>
}

/** How a value becomes the stored text and back: JSON for remember(), nothing for rememberJson(). */
interface Codec<T> {
  encode(value: T): string | undefined
  decode(text: string): T
}
const jsonCodec: Codec<unknown> = {
  encode: (value) => JSON.stringify(value),
  decode: (text) => JSON.parse(text),
}
const textCodec: Codec<string> = { encode: (value) => value, decode: (text) => text }

/**
 * The one cache mechanism: JSON values with a TTL and tags, single-flight per key in this process;
 * optionally kept past the TTL for stale answers when a new load fails, and refreshed in the
 * background shortly before the TTL ends.
 */
export function createCache(driver: CacheDriver, options: CacheOptions = {}): Cache {
  // Loads callers wait for (a miss, an expired entry), and refreshes nobody waits for.
  const loads = new Map<string, Load>()
  const refreshes = new Map<string, Flight>()
  const report = (error: unknown, operation: 'get' | 'set' | 'invalidate') =>
    options.onError?.(error, operation)
  const { onRead, onStale } = options

  // A flight started before an invalidation must neither be stored nor joined by later callers.
  const forgetFlights = (tags: string[]) => {
    const dropped = new Set(tags)
    for (const flights of [loads, refreshes] as Map<string, Flight>[]) {
      for (const [key, flight] of flights) {
        if (flight.tags.some((tag) => dropped.has(tag))) {
          flight.invalidated = true
          flights.delete(key)
        }
      }
    }
  }
  driver.onInvalidate?.(forgetFlights)

  const decoded = <T>(text: Buffer | string, codec: Codec<T>): { value: T } | undefined => {
    try {
      return { value: codec.decode(typeof text === 'string' ? text : text.toString()) }
    } catch (error) {
      report(error, 'get') // an unreadable entry reads as a miss and is overwritten by the load
      return undefined
    }
  }

  /** fn's value, stored unless its flight was invalidated meanwhile (tag versions taken before fn ran). */
  async function loadAndStore<T>(
    key: string,
    { ttlSeconds, staleSeconds = 0, tags = [] }: RememberOptions,
    flight: Flight,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ): Promise<T> {
    const versions =
      driver.tagVersions && tags.length > 0
        ? await driver.tagVersions(tags).catch((error) => void report(error, 'get'))
        : undefined
    const value = await fn()
    const json = codec.encode(value)
    if (!flight.invalidated && ttlSeconds > 0 && json !== undefined) {
      await driver
        .set(key, json, { ttlSeconds, staleSeconds }, tags, versions)
        .catch((error) => report(error, 'set'))
      if (tags.length === 0) driver.keepNear?.(key, json, ttlSeconds * 1000)
    }
    return value
  }

  /** One background load of key per process; its failure leaves the entry as it is, to expire. */
  function refresh<T>(key: string, remember: RememberOptions, fn: () => Promise<T>, codec: Codec<T>) {
    if (refreshes.has(key)) return
    const flight: Flight = { tags: remember.tags ?? [], invalidated: false }
    refreshes.set(key, flight)
    const land = () => {
      if (refreshes.get(key) === flight) refreshes.delete(key)
    }
    onRead?.(false)
    // Whoever fn calls reports its own failures (the upstream client tells dependency health).
    loadAndStore(key, remember, flight, fn, codec).then(land, land)
  }

  const refreshDue = (entry: StoredEntry<unknown>, remember: Pick<RememberOptions, 'refreshAheadSeconds'>) =>
    remember.refreshAheadSeconds !== undefined && entry.freshForMs <= remember.refreshAheadSeconds * 1000

  /** A fresh entry as a hit, starting its refresh when due. */
  function hit<T>(
    key: string,
    entry: StoredEntry,
    remember: RememberOptions,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ): Remembered<T> | undefined {
    const found = decoded(entry.value, codec)
    if (!found) return undefined
    onRead?.(true)
    if (refreshDue(entry, remember)) refresh(key, remember, fn, codec)
    return { value: found.value, hit: true }
  }

  async function load<T>(
    key: string,
    remember: RememberOptions,
    flight: Flight,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ): Promise<Remembered<T>> {
    const entry = await driver.get(key).catch((error) => void report(error, 'get'))
    let expired: { value: T; expiredMs: number } | undefined
    if (entry !== undefined && entry.freshForMs > 0) {
      const answered = hit(key, entry, remember, fn, codec)
      if (answered) {
        if (driver.keepNear && (remember.tags ?? []).length === 0) {
          driver.keepNear(key, entry.value.toString(), entry.freshForMs)
        }
        return answered
      }
    } else if (entry !== undefined && -entry.freshForMs <= (remember.staleSeconds ?? 0) * 1000) {
      const found = decoded(entry.value, codec)
      if (found) expired = { value: found.value, expiredMs: -entry.freshForMs }
    }
    onRead?.(false)
    try {
      const value = await loadAndStore(key, remember, flight, fn, codec)
      return expired ? { value, hit: false, expired: true } : { value, hit: false }
    } catch (error) {
      // Never an entry a write has invalidated since it was read, and only for the failures allowed.
      const reason = expired && !flight.invalidated ? remember.staleIf?.(error) : undefined
      if (expired === undefined || reason === undefined) throw error
      return { value: expired.value, hit: false, stale: { error, reason, expiredMs: expired.expiredMs } }
    }
  }

  function fly<T>(
    key: string,
    remember: RememberOptions,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ): Promise<Remembered<T>> {
    const running = loads.get(key)
    if (running) return counted(running.promise as Promise<Remembered<T>>)
    // An entry fresh in this process's memory is answered at once, with no flight to set up and land;
    // one due for its refresh goes to the store, where another instance may have refreshed it already.
    const inMemory = driver.peek?.(key)
    if (
      inMemory !== undefined &&
      inMemory.freshForMs > 0 &&
      !(refreshDue(inMemory, remember) && !refreshes.has(key))
    ) {
      const answered = hit(key, inMemory, remember, fn, codec)
      if (answered) return Promise.resolve(answered)
    }
    const flight: Load = { tags: remember.tags ?? [], invalidated: false, promise: undefined as never }
    const promise = load(key, remember, flight, fn, codec)
    flight.promise = promise
    loads.set(key, flight)
    const land = () => {
      if (loads.get(key) === flight) loads.delete(key)
    }
    promise.then(land, land)
    return counted(promise)
  }

  // Every stale answer counts, joiners' too: the metric tells how many readers got old data.
  const counted = <T>(promise: Promise<Remembered<T>>) =>
    onStale
      ? promise.then((answer) => {
          if (answer.stale) onStale(answer.stale.reason)
          return answer
        })
      : promise

  return {
    remember<T>(key: string, options: RememberOptions, fn: () => Promise<T>) {
      return fly(key, options, fn, jsonCodec as Codec<T>)
    },

    rememberJson(key, options, fn) {
      return fly(key, options, fn, textCodec)
    },

    // A load under way is joined through rememberJson(), never overtaken (as fly() does); a refresh
    // that is due is started there too, so this lane only answers what needs nothing done.
    jsonInMemory(key, remember = {}) {
      if (loads.has(key)) return undefined
      const entry = driver.peek?.(key)
      if (entry === undefined || entry.freshForMs <= 0) return undefined
      if (refreshDue(entry, remember) && !refreshes.has(key)) return undefined
      onRead?.(true)
      return entry.value
    },

    async invalidateTags(tags) {
      if (tags.length === 0) return
      forgetFlights(tags)
      await driver.invalidateTags(tags).catch((error) => report(error, 'invalidate'))
    },

    async close() {
      await driver.close()
    },
  }
}
