import { type Clock, systemClock } from '../clock.ts'
import { type Codec, jsonCodec, textCodec } from './codec.ts'
import type { CacheDriver, ReportStoreFailure } from './driver.ts'
import { createClaimLoad } from './flights.ts'
import { createLoadAndStore } from './load-and-store.ts'
import { createReadPath } from './read-path.ts'
import { createRefreshAhead } from './refresh-ahead.ts'
import type { Remembered, RememberOptions } from './remembered.ts'

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
  onError?: ReportStoreFailure
  /**
   * Told of each lookup in the store: a hit, or a miss (the value is then loaded). A caller joining
   * a load under way makes no lookup of its own, so misses count the loads.
   */
  onRead?: (hit: boolean) => void
  /** Told of each answer given stale, with staleIf's reason or REVALIDATING (joiners of a flight each count). */
  onStale?: (reason: string) => void
}

/**
 * The one cache mechanism: JSON values with a TTL and tags, single-flight per key in this process
 * (and, for an entry held, across the instances of a driver that claims loads); optionally kept past
 * the TTL for stale answers while a new load runs or when it fails, and refreshed in the background
 * shortly before the TTL ends.
 */
export function createCache(driver: CacheDriver, options: CacheOptions = {}): Cache {
  const report: ReportStoreFailure = (error, operation) => options.onError?.(error, operation)
  const { onRead, onStale } = options
  const clock = options.clock ?? systemClock
  const claim = createClaimLoad(driver, report)
  const loadAndStore = createLoadAndStore(driver, report)
  const refreshAhead = createRefreshAhead({ clock, onRead, claim, loadAndStore })
  const reads = createReadPath({ driver, clock, report, onRead, onStale, claim, loadAndStore, refreshAhead })

  const forgetFlights = (tags: string[]) => {
    reads.forget(tags)
    refreshAhead.forget(tags)
  }
  driver.onInvalidate?.(forgetFlights)

  return {
    remember<T>(key: string, options: RememberOptions, fn: () => Promise<T>) {
      return reads.read(key, options, fn, jsonCodec as Codec<T>)
    },

    rememberJson(key, options, fn) {
      return reads.read(key, options, fn, textCodec)
    },

    jsonInMemory(key, remember = {}) {
      return reads.jsonInMemory(key, remember)
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
