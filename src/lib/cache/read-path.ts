import type { Clock } from '../clock.ts'
import type { Codec } from './codec.ts'
import type { CacheDriver, ReportStoreFailure, StoredEntry } from './driver.ts'
import { type ClaimLoad, createFlightsUnderWay, type Flight, newFlight } from './flights.ts'
import type { LoadAndStore } from './load-and-store.ts'
import type { RefreshAhead } from './refresh-ahead.ts'
import { REVALIDATING, type Remembered, type RememberOptions } from './remembered.ts'

/** How a read of key is answered: from memory, the store, a load under way, or fn. */
export interface ReadPath {
  /** The answer of remember() and rememberJson(), through codec. */
  read<T>(
    key: string,
    remember: RememberOptions,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ): Promise<Remembered<T>>
  /** The answer of jsonInMemory(). */
  jsonInMemory(key: string, remember: Pick<RememberOptions, 'refreshAheadSeconds'>): string | undefined
  /** Loads under way under any of these tags are neither stored nor joined any more. */
  forget(tags: string[]): void
}

/** The value an entry past its TTL held, and when the store was read. */
interface Old<T = unknown> {
  value: T
  expiredMs: number
  readAtMs: number
}

/** A load callers wait for (a miss, an expired entry). */
interface Load extends Flight {
  promise: Promise<Remembered<unknown>>
  /** Settles once the store was read: the entry's old value when it was past its TTL (within grace). */
  old: Promise<Old | undefined>
}

export function createReadPath({
  driver,
  clock,
  report,
  onRead,
  onStale,
  claim,
  loadAndStore,
  refreshAhead,
}: {
  driver: CacheDriver
  clock: Clock
  report: ReportStoreFailure
  onRead?: (hit: boolean) => void
  onStale?: (reason: string) => void
  claim: ClaimLoad
  loadAndStore: LoadAndStore
  refreshAhead: RefreshAhead
}): ReadPath {
  const loads = createFlightsUnderWay<Load>(clock)

  /** The old value, answered at once because a load of the key is under way. */
  const revalidating = <T>(old: Old<T>): Remembered<T> => ({
    value: old.value,
    hit: false,
    stale: { reason: REVALIDATING, expiredMs: old.expiredMs + clock.nowMs() - old.readAtMs },
  })

  const decoded = <T>(text: Buffer | string, codec: Codec<T>): { value: T } | undefined => {
    try {
      return { value: codec.decode(typeof text === 'string' ? text : text.toString()) }
    } catch (error) {
      report(error, 'get') // an unreadable entry reads as a miss and is overwritten by the load
      return undefined
    }
  }

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
    refreshAhead.startIfDue(key, entry, remember, fn, codec)
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
    const refreshing = expired === undefined ? refreshAhead.underWay(key) : undefined
    if (refreshing) {
      const landed = await refreshing.landed.catch(() => undefined)
      if (landed !== undefined && !refreshing.invalidated) return { value: landed.value as T, hit: false }
    }
    let release = () => {}
    if (expired) {
      // Past its TTL while a load of it runs (its refresh here, or any load on another instance):
      // the old value at once, and no second call.
      const claimed = entry?.loading || refreshAhead.underWay(key) ? undefined : await claim(key, remember)
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

  // Every stale answer counts, joiners' too: the metric tells how many readers got old data.
  const counted = <T>(promise: Promise<Remembered<T>>) =>
    onStale
      ? promise.then((answer) => {
          if (answer.stale) onStale(answer.stale.reason)
          return answer
        })
      : promise

  return {
    read<T>(key: string, remember: RememberOptions, fn: () => Promise<T>, codec: Codec<T>) {
      const running = loads.underWay(key)
      if (running) return counted(join<T>(running))
      // An entry fresh in this process's memory is answered at once, with no flight to set up and land;
      // one due for its refresh goes to the store, where another instance may have refreshed it already.
      const inMemory = driver.peek?.(key)
      if (inMemory !== undefined && inMemory.freshForMs > 0 && !refreshAhead.due(key, inMemory, remember)) {
        const answered = hit(key, inMemory, remember, fn, codec)
        if (answered) return Promise.resolve(answered)
      }
      let told!: (old: Old<T> | undefined) => void
      const old = new Promise<Old<T> | undefined>((resolve) => {
        told = resolve
      })
      const flight: Load = { ...newFlight(remember, clock), old, promise: undefined as never }
      const promise = load(key, remember, flight, fn, codec, told)
      flight.promise = promise
      loads.add(key, flight)
      const land = () => {
        told(undefined) // joiners waiting for it, should the load have failed before reading the store
        loads.land(key, flight)
      }
      promise.then(land, land)
      return counted(promise)
    },

    // A load under way is joined through rememberJson(), never overtaken (as read() does); a refresh
    // that is due is started there too, so this lane only answers what needs nothing done.
    jsonInMemory(key, remember) {
      if (loads.underWay(key)) return undefined
      const entry = driver.peek?.(key)
      if (entry === undefined || entry.freshForMs <= 0) return undefined
      if (refreshAhead.due(key, entry, remember)) return undefined
      onRead?.(true)
      return entry.value
    },

    forget: (tags) => loads.forget(tags),
  }
}
