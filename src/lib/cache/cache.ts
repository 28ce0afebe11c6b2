import { type Clock, systemClock } from '../clock.ts'

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
  /** Tells how long a load has run (the memory driver's entries follow the same clock). */
  clock?: Clock
  /** Told about a failing store (the cache then behaves as a miss, so answers still come). */
  onError?: (error: unknown, operation: 'get' | 'set' | 'invalidate') => void
  /**
   * Told of each lookup in the store: a hit, or a miss (the value is then loaded). A caller joining
   * a load under way makes no lookup of its own, so misses count the loads.
   */
  onRead?: (hit: boolean) => void
  /** Told of each answer given stale, with staleIf's reason or REVALIDATING (joiners of a flight each count). */
  onStale?: (reason: string) => void
}

interface Flight {
  tags: readonly string[]
  /**
   * Set when one of its tags was invalidated while it ran: its result is answered but not stored,
   * and its failure is never answered from the entry read before the invalidation.
   */
  invalidated: boolean
  /** When (on the cache's clock) it is given up on: a load that never settles must not hold its key. */
  givenUpAt: number
}

/** The value an entry past its TTL held, and when the store was read. */
interface Old<T = unknown> {
  value: T
  expiredMs: number
  readAtMs: number
}

interface Refresh extends Flight {
  /** Settles once it landed: fn's value (undefined when another instance had claimed the load); rejects when fn failed. */
  landed: Promise<{ value: unknown } | undefined>
}

interface Load extends Flight {
  promise: Promise<Remembered<unknown>>
  /** Settles once the store was read: the entry's old value when it was past its TTL (within grace). */
  old: Promise<Old | undefined>
}

const DEFAULT_MAX_LOAD_MS = 30_000
/**
 * A shared claim outlives its load's time-out by this much, so a load cut by its own time-out has
 * landed (and given the claim back) before another instance may start the next.
 */
const CLAIM_MARGIN_MS = 1_000
/**
 * Background refreshes under way at most (per process). Past it a due hit starts none: the entry
 * then ends at its TTL and is loaded by a reader, as one nobody read near its end.
 */
const MAX_REFRESHES = 1_000

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
 * The one cache mechanism: JSON values with a TTL and tags, single-flight per key in this process
 * (and, for an entry held, across the instances of a driver that claims loads); optionally kept past
 * the TTL for stale answers while a new load runs or when it fails, and refreshed in the background
 * shortly before the TTL ends.
 */
export function createCache(driver: CacheDriver, options: CacheOptions = {}): Cache {
  // Loads callers wait for (a miss, an expired entry), and refreshes nobody waits for. Each leaves
  // its map when it lands, or is replaced once given up on: the maps hold flights under way only.
  const loads = new Map<string, Load>()
  const refreshes = new Map<string, Refresh>()
  const report = (error: unknown, operation: 'get' | 'set' | 'invalidate') =>
    options.onError?.(error, operation)
  const { onRead, onStale } = options
  const clock = options.clock ?? systemClock
  const maxLoadMs = (remember: RememberOptions) => remember.maxLoadMs ?? DEFAULT_MAX_LOAD_MS
  const flightOf = (remember: RememberOptions): Flight => ({
    tags: remember.tags ?? [],
    invalidated: false,
    givenUpAt: clock.nowMs() + maxLoadMs(remember),
  })
  const underWay = <F extends Flight>(flights: Map<string, F>, key: string): F | undefined => {
    const flight = flights.get(key)
    return flight !== undefined && flight.givenUpAt > clock.nowMs() ? flight : undefined
  }

  /**
   * The one load of key across the instances sharing the store, for a driver that coordinates them:
   * how to give it back (nothing to give without such a driver, or while it fails), or undefined
   * when another instance's load holds it.
   */
  const claim = async (key: string, remember: RememberOptions): Promise<(() => void) | undefined> => {
    if (!driver.claimLoad) return () => {}
    try {
      const release = await driver.claimLoad(key, maxLoadMs(remember) + CLAIM_MARGIN_MS)
      if (release === undefined) return undefined
      return () => void release().catch((error) => report(error, 'set'))
    } catch (error) {
      report(error, 'get')
      return () => {}
    }
  }

  /** The old value, answered at once because a load of the key is under way. */
  const revalidating = <T>(old: Old<T>): Remembered<T> => ({
    value: old.value,
    hit: false,
    stale: { reason: REVALIDATING, expiredMs: old.expiredMs + clock.nowMs() - old.readAtMs },
  })

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

  /**
   * One background load of key, here and (with a driver that claims loads) across the instances
   * sharing the store; its failure leaves the entry as it is, to expire.
   */
  function refresh<T>(
    key: string,
    entry: StoredEntry,
    remember: RememberOptions,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ) {
    if (entry.loading || underWay(refreshes, key) || !roomForRefresh()) return
    const refreshing: Refresh = { ...flightOf(remember), landed: undefined as never }
    const run = async () => {
      const release = await claim(key, remember)
      if (release === undefined) return undefined // another instance got there first
      onRead?.(false)
      try {
        return { value: await loadAndStore(key, remember, refreshing, fn, codec) }
      } finally {
        release()
      }
    }
    refreshing.landed = run()
    refreshes.set(key, refreshing)
    const land = () => {
      if (refreshes.get(key) === refreshing) refreshes.delete(key)
    }
    // Whoever fn calls reports its own failures (the upstream client tells dependency health).
    refreshing.landed.then(land, land)
  }

  const roomForRefresh = () => {
    if (refreshes.size < MAX_REFRESHES) return true
    const now = clock.nowMs()
    for (const [key, flight] of refreshes) if (flight.givenUpAt <= now) refreshes.delete(key)
    return refreshes.size < MAX_REFRESHES
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
    if (refreshDue(entry, remember)) refresh(key, entry, remember, fn, codec)
    return { value: found.value, hit: true }
  }

  /** The store's answer for key, else fn's; `told` learns at once whether the entry was past its TTL. */
  async function load<T>(
    key: string,
    remember: RememberOptions,
    flight: Flight,
    fn: () => Promise<T>,
    codec: Codec<T>,
    told: (old: Old<T> | undefined) => void,
  ): Promise<Remembered<T>> {
    const entry = await driver.get(key).catch((error) => void report(error, 'get'))
    let expired: Old<T> | undefined
    if (entry !== undefined && entry.freshForMs > 0) {
      told(undefined)
      const answered = hit(key, entry, remember, fn, codec)
      if (answered) {
        if (driver.keepNear && (remember.tags ?? []).length === 0) {
          driver.keepNear(key, entry.value.toString(), entry.freshForMs)
        }
        return answered
      }
    } else if (entry !== undefined && -entry.freshForMs <= (remember.staleSeconds ?? 0) * 1000) {
      const found = decoded(entry.value, codec)
      if (found) expired = { value: found.value, expiredMs: -entry.freshForMs, readAtMs: clock.nowMs() }
    }
    told(expired)
    // Gone (no grace kept) while its refresh here runs: that refresh's value, rather than a second call.
    const refreshing = expired === undefined ? underWay(refreshes, key) : undefined
    if (refreshing) {
      const landed = await refreshing.landed.catch(() => undefined)
      if (landed !== undefined && !refreshing.invalidated) return { value: landed.value as T, hit: false }
    }
    let release = () => {}
    if (expired) {
      // Past its TTL while a load of it runs (its refresh here, or any load on another instance):
      // the old value at once, and no second call.
      const claimed = entry?.loading || underWay(refreshes, key) ? undefined : await claim(key, remember)
      if (claimed === undefined) {
        onRead?.(true)
        return revalidating(expired)
      }
      release = claimed
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
    } finally {
      release()
    }
  }

  /**
   * A caller arriving while a load of key runs: the old value at once when the entry it read was
   * past its TTL (and no write has invalidated it since), else that load's answer.
   */
  async function join<T>(running: Load): Promise<Remembered<T>> {
    const old = await running.old
    if (old !== undefined && !running.invalidated) return revalidating(old as Old<T>)
    return running.promise as Promise<Remembered<T>>
  }

  function fly<T>(
    key: string,
    remember: RememberOptions,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ): Promise<Remembered<T>> {
    const running = underWay(loads, key)
    if (running) return counted(join<T>(running))
    // An entry fresh in this process's memory is answered at once, with no flight to set up and land;
    // one due for its refresh goes to the store, where another instance may have refreshed it already.
    const inMemory = driver.peek?.(key)
    if (
      inMemory !== undefined &&
      inMemory.freshForMs > 0 &&
      !(refreshDue(inMemory, remember) && !underWay(refreshes, key))
    ) {
      const answered = hit(key, inMemory, remember, fn, codec)
      if (answered) return Promise.resolve(answered)
    }
    let told!: (old: Old<T> | undefined) => void
    const old = new Promise<Old<T> | undefined>((resolve) => {
      told = resolve
    })
    const flight: Load = { ...flightOf(remember), old, promise: undefined as never }
    const promise = load(key, remember, flight, fn, codec, told)
    flight.promise = promise
    loads.set(key, flight)
    const land = () => {
      told(undefined) // joiners waiting for it, should the load have failed before reading the store
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
      if (underWay(loads, key)) return undefined
      const entry = driver.peek?.(key)
      if (entry === undefined || entry.freshForMs <= 0) return undefined
      if (refreshDue(entry, remember) && !underWay(refreshes, key)) return undefined
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
