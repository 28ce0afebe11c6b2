/** Where cached JSON lives: in this process (memory.ts) or shared by every instance (redis.ts). */
export interface CacheDriver {
  get(key: string): Promise<Buffer | string | undefined>
  /** `get` without waiting, for a driver that holds its entries in this process (a hit skips the flight). */
  peek?(key: string): string | undefined
  /**
   * Stores value for ttlSeconds under tags. With `versions` (from tagVersions, taken before the value
   * was computed) a driver shared by several instances skips the write when a tag was invalidated
   * meanwhile, so an answer read before another instance's write is never stored after it.
   */
  set(key: string, value: string, ttlSeconds: number, tags: string[], versions?: unknown): Promise<void>
  /** Drops every entry stored under any of these tags, for every instance sharing the store. */
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
}

export interface Cache {
  /**
   * The cached value for key or, on a miss, fn's result stored for ttlSeconds under tags. Concurrent
   * misses for one key in this process share ONE fn call (single-flight). A rejected fn is never cached.
   * Values must be JSON data; callers sharing one flight get the same object, so treat it as read-only.
   */
  remember<T>(
    key: string,
    options: RememberOptions,
    fn: () => Promise<T>,
  ): Promise<{ value: T; hit: boolean }>
  /**
   * remember() for a value that already is JSON text (an answer about to be sent as is): stored and
   * returned unchanged, so a hit costs no parse and no second serialization.
   */
  rememberJson(
    key: string,
    options: RememberOptions,
    fn: () => Promise<string>,
  ): Promise<{ value: string; hit: boolean }>
  /**
   * The JSON text rememberJson() would answer as a hit, when this process holds it in memory (and
   * no load of the key is under way): a warm read answered without a promise. Undefined otherwise,
   * and then rememberJson() is the way.
   */
  heldJson(key: string): string | undefined
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
}

interface Flight {
  tags: readonly string[]
  /** Set when one of its tags was invalidated while it ran: its result is answered but not stored. */
  stale: boolean
  promise: Promise<{ value: unknown; hit: boolean }>
}

/** The one cache mechanism: JSON values with a TTL and tags, single-flight per key in this process. */
export function createCache(driver: CacheDriver, options: CacheOptions = {}): Cache {
  const flights = new Map<string, Flight>()
  const report = (error: unknown, operation: 'get' | 'set' | 'invalidate') =>
    options.onError?.(error, operation)
  const onRead = options.onRead

  // A flight started before an invalidation must neither be stored nor joined by later callers.
  const forgetFlights = (tags: string[]) => {
    if (flights.size === 0) return
    const dropped = new Set(tags)
    for (const [key, flight] of flights) {
      if (flight.tags.some((tag) => dropped.has(tag))) {
        flight.stale = true
        flights.delete(key)
      }
    }
  }
  driver.onInvalidate?.(forgetFlights)

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

  async function load<T>(
    key: string,
    ttlSeconds: number,
    tags: string[],
    flight: Flight,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ) {
    const cached = await driver.get(key).catch((error) => void report(error, 'get'))
    if (cached !== undefined) {
      try {
        const value = codec.decode(typeof cached === 'string' ? cached : cached.toString())
        onRead?.(true)
        return { value, hit: true }
      } catch (error) {
        report(error, 'get') // an unreadable entry reads as a miss and is overwritten below
      }
    }
    onRead?.(false)
    const versions =
      driver.tagVersions && tags.length > 0
        ? await driver.tagVersions(tags).catch((error) => void report(error, 'get'))
        : undefined
    const value = await fn()
    const json = codec.encode(value)
    if (!flight.stale && ttlSeconds > 0 && json !== undefined) {
      await driver.set(key, json, ttlSeconds, tags, versions).catch((error) => report(error, 'set'))
    }
    return { value, hit: false }
  }

  /** An entry in this process's memory, decoded and counted as a hit. */
  function held<T>(key: string, codec: Codec<T>): { value: T } | undefined {
    const text = driver.peek?.(key)
    if (text === undefined) return undefined
    try {
      const value = codec.decode(text)
      onRead?.(true)
      return { value }
    } catch (error) {
      report(error, 'get') // unreadable: loaded again, as a miss
      return undefined
    }
  }

  function fly<T>(
    key: string,
    { ttlSeconds, tags = [] }: RememberOptions,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ) {
    const running = flights.get(key)
    if (running) return running.promise as Promise<{ value: T; hit: boolean }>
    // An entry in this process's memory is answered at once, with no flight to set up and land.
    const inMemory = held(key, codec)
    if (inMemory) return Promise.resolve({ value: inMemory.value, hit: true })
    const flight: Flight = { tags, stale: false, promise: undefined as never }
    const promise = load(key, ttlSeconds, tags, flight, fn, codec)
    flight.promise = promise
    flights.set(key, flight)
    const land = () => {
      if (flights.get(key) === flight) flights.delete(key)
    }
    promise.then(land, land)
    return promise
  }

  return {
    remember<T>(key: string, options: RememberOptions, fn: () => Promise<T>) {
      return fly(key, options, fn, jsonCodec as Codec<T>)
    },

    rememberJson(key, options, fn) {
      return fly(key, options, fn, textCodec)
    },

    // A load under way is joined through rememberJson(), never overtaken (as fly() does).
    heldJson: (key) => (flights.has(key) ? undefined : held(key, textCodec)?.value),

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
