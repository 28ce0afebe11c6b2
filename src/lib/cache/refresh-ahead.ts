import type { Clock } from '../clock.ts'
import type { Codec } from './codec.ts'
import type { StoredEntry } from './driver.ts'
import { type ClaimLoad, createFlightsUnderWay, type Flight, newFlight } from './flights.ts'
import type { LoadAndStore } from './load-and-store.ts'
import type { RememberOptions } from './remembered.ts'

export interface Refresh extends Flight {
  /** Settles once it landed: fn's value (undefined when another instance had claimed the load); rejects when fn failed. */
  landed: Promise<{ value: unknown } | undefined>
}

/**
 * Background refreshes under way at most (per process). Past it a due hit starts none: the entry
 * then ends at its TTL and is loaded by a reader, as one nobody read near its end.
 */
const MAX_REFRESHES = 1_000

type RefreshAheadOptions = Pick<RememberOptions, 'refreshAheadSeconds'>

const refreshDue = (entry: StoredEntry<unknown>, remember: RefreshAheadOptions) =>
  remember.refreshAheadSeconds !== undefined && entry.freshForMs <= remember.refreshAheadSeconds * 1000

/** Refresh-ahead: a hit near the end of its TTL starts one background load of its key. */
export interface RefreshAhead {
  /**
   * For a hit on entry: one background load of key when due, here and (with a driver that claims
   * loads) across the instances sharing the store; its failure leaves the entry as it is, to expire.
   */
  startIfDue<T>(
    key: string,
    entry: StoredEntry,
    remember: RememberOptions,
    fn: () => Promise<T>,
    codec: Codec<T>,
  ): void
  /**
   * The entry is due for a refresh that no flight here runs yet: a hit on it goes through the store,
   * where another instance may have refreshed it already, and starts one.
   */
  due(key: string, entry: StoredEntry<unknown>, remember: RefreshAheadOptions): boolean
  underWay(key: string): Refresh | undefined
  forget(tags: string[]): void
}

export function createRefreshAhead({
  clock,
  onRead,
  claim,
  loadAndStore,
}: {
  clock: Clock
  onRead?: (hit: boolean) => void
  claim: ClaimLoad
  loadAndStore: LoadAndStore
}): RefreshAhead {
  const refreshes = createFlightsUnderWay<Refresh>(clock)

  const roomForRefresh = () => {
    if (refreshes.size < MAX_REFRESHES) return true
    refreshes.dropGivenUp()
    return refreshes.size < MAX_REFRESHES
  }

  return {
    startIfDue(key, entry, remember, fn, codec) {
      if (!refreshDue(entry, remember)) return
      if (entry.loading || refreshes.underWay(key) || !roomForRefresh()) return
      const refreshing: Refresh = { ...newFlight(remember, clock), landed: undefined as never }
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
      refreshes.add(key, refreshing)
      const land = () => refreshes.land(key, refreshing)
      // Whoever fn calls reports its own failures (the upstream client tells dependency health).
      refreshing.landed.then(land, land)
    },

    due(key, entry, remember) {
      return refreshDue(entry, remember) && !refreshes.underWay(key)
    },

    underWay: (key) => refreshes.underWay(key),
    forget: (tags) => refreshes.forget(tags),
  }
}
