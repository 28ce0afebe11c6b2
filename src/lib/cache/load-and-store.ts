import type { Codec } from './codec.ts'
import type { CacheDriver, ReportStoreFailure } from './driver.ts'
import type { Flight } from './flights.ts'
import type { RememberOptions } from './remembered.ts'

/** fn's value, stored unless its flight was invalidated meanwhile (tag versions taken before fn ran). */
export type LoadAndStore = <T>(
  key: string,
  remember: RememberOptions,
  flight: Flight,
  fn: () => Promise<T>,
  codec: Codec<T>,
) => Promise<T>

export function createLoadAndStore(driver: CacheDriver, report: ReportStoreFailure): LoadAndStore {
  return async (key, { ttlSeconds, staleSeconds = 0, tags = [] }, flight, fn, codec) => {
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
}
