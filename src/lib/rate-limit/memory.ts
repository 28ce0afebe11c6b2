import { type Clock, unixSeconds } from '../clock.ts'
import type { RateLimitStore } from './store.ts'

const SWEEP_ABOVE = 10_000

/** In-process counters for a single instance; expired windows are swept once the map grows. */
export function createMemoryRateLimitStore(clock: Clock): RateLimitStore {
  const windows = new Map<string, { attempts: number; resetAt: number }>()
  return {
    async hit(key, decaySeconds) {
      const now = unixSeconds(clock)
      if (windows.size > SWEEP_ABOVE) {
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k)
      }
      let window = windows.get(key)
      if (!window || window.resetAt <= now) {
        window = { attempts: 0, resetAt: now + decaySeconds }
        windows.set(key, window)
      }
      window.attempts += 1
      return { ...window }
    },
    async clear(key) {
      windows.delete(key)
    },
  }
}
