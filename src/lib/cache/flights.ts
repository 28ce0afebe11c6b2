import type { Clock } from '../clock.ts'
import type { CacheDriver, ReportStoreFailure } from './driver.ts'
import type { RememberOptions } from './remembered.ts'

/** A load of a key under way in this process: one callers wait for, or a refresh nobody waits for. */
export interface Flight {
  tags: readonly string[]
  /**
   * Set when one of its tags was invalidated while it ran: its result is answered but not stored,
   * and its failure is never answered from the entry read before the invalidation.
   */
  invalidated: boolean
  /** When (on the cache's clock) it is given up on: a load that never settles must not hold its key. */
  givenUpAt: number
}

const DEFAULT_MAX_LOAD_MS = 30_000
/**
 * A shared claim outlives its load's time-out by this much, so a load cut by its own time-out has
 * landed (and given the claim back) before another instance may start the next.
 */
const CLAIM_MARGIN_MS = 1_000

const maxLoadMs = (remember: RememberOptions) => remember.maxLoadMs ?? DEFAULT_MAX_LOAD_MS

/** A flight starting now, given up on once remember's maxLoadMs has passed. */
export const newFlight = (remember: RememberOptions, clock: Clock): Flight => ({
  tags: remember.tags ?? [],
  invalidated: false,
  givenUpAt: clock.nowMs() + maxLoadMs(remember),
})

/**
 * The flights of one kind, by key. Each leaves when it lands, or is replaced once given up on: they
 * are flights under way only.
 */
export interface FlightsUnderWay<F extends Flight> {
  /** key's flight, unless none runs or it has been given up on. */
  underWay(key: string): F | undefined
  add(key: string, flight: F): void
  /** Drops key's landed flight, unless a newer one has replaced it. */
  land(key: string, flight: F): void
  /** Marks every flight under any of these tags invalidated, and drops it. */
  forget(tags: string[]): void
  dropGivenUp(): void
  readonly size: number
}

export function createFlightsUnderWay<F extends Flight>(clock: Clock): FlightsUnderWay<F> {
  const flights = new Map<string, F>()
  return {
    underWay(key) {
      const flight = flights.get(key)
      return flight !== undefined && flight.givenUpAt > clock.nowMs() ? flight : undefined
    },
    add(key, flight) {
      flights.set(key, flight)
    },
    land(key, flight) {
      if (flights.get(key) === flight) flights.delete(key)
    },
    // A flight started before an invalidation must neither be stored nor joined by later callers.
    forget(tags) {
      const dropped = new Set(tags)
      for (const [key, flight] of flights) {
        if (flight.tags.some((tag) => dropped.has(tag))) {
          flight.invalidated = true
          flights.delete(key)
        }
      }
    },
    dropGivenUp() {
      const now = clock.nowMs()
      for (const [key, flight] of flights) if (flight.givenUpAt <= now) flights.delete(key)
    },
    get size() {
      return flights.size
    },
  }
}

/**
 * The one load of key across the instances sharing the store, for a driver that coordinates them:
 * how to give it back (nothing to give without such a driver, or while it fails), or undefined
 * when another instance's load holds it.
 */
export type ClaimLoad = (key: string, remember: RememberOptions) => Promise<(() => void) | undefined>

export function createClaimLoad(driver: CacheDriver, report: ReportStoreFailure): ClaimLoad {
  return async (key, remember) => {
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
}
