import { type Clock, unixSeconds } from '../clock.ts'
import type { InProcessRateLimitStore } from './store.ts'

const SWEEP_ABOVE = 10_000

/** In-process counters for a single instance; expired windows are swept once the map grows. */
export function createMemoryRateLimitStore(clock: Clock): InProcessRateLimitStore {
  const windows = new Map<string, { attempts: number; resetAt: number }>()
  const current = (key: string) => {
    const window = windows.get(key)
    return window && window.resetAt > unixSeconds(clock) ? window : undefined
  }
  return {
    hit(key, decaySeconds) {
      const now = unixSeconds(clock)
      if (windows.size > SWEEP_ABOVE) {
        for (const [k, w] of windows) if (w.resetAt <= now) windows.delete(k)
      }
      let window = current(key)
      if (!window) {
        window = { attempts: 0, resetAt: now + decaySeconds }
        windows.set(key, window)
      }
      window.attempts += 1
      return { ...window }
    },
    async peek(key) {
      const window = current(key)
      return window ? { ...window } : null
    },
    refundNow(key) {
      const window = current(key)
      if (window && window.attempts > 0) window.attempts -= 1
    },
    async refund(key) {
      this.refundNow(key)
    },
    async clear(key) {
      windows.delete(key)
    },
  }
}
