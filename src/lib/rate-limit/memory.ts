import { type Clock, unixSeconds } from '../clock.ts'
import type { InProcessRateLimitStore } from './store.ts'

/**
 * Live windows one process keeps at most (about 150 bytes each). Past it the oldest window goes: a
 * flood of one-off keys costs the oldest counts, never the memory or the speed of every request.
 */
export const MAX_WINDOWS = 100_000

/** The memory store, and how many windows it holds (tests check the bound and the expiry). */
export interface MemoryRateLimitStore extends InProcessRateLimitStore {
  readonly size: number
}

/**
 * In-process counters for a single instance. Windows expire incrementally: each is listed under the
 * second it ends, and every hit first deletes the windows of the seconds passed since the last one,
 * so a hit costs the same however many windows are live.
 */
export function createMemoryRateLimitStore(
  clock: Clock,
  { maxWindows = MAX_WINDOWS }: { maxWindows?: number } = {},
): MemoryRateLimitStore {
  // In the order the windows started, so the first is the oldest (evicted past maxWindows).
  const windows = new Map<string, { attempts: number; resetAt: number }>()
  const endingAt = new Map<number, Set<string>>()
  let expiredUpTo = unixSeconds(clock)

  const expire = (now: number) => {
    for (; expiredUpTo < now; expiredUpTo += 1) {
      const second = expiredUpTo + 1
      const keys = endingAt.get(second)
      if (keys === undefined) continue
      endingAt.delete(second)
      for (const key of keys) windows.delete(key)
    }
  }
  const forget = (key: string) => {
    const window = windows.get(key)
    if (window === undefined) return
    windows.delete(key)
    endingAt.get(window.resetAt)?.delete(key)
  }
  const current = (key: string) => {
    const window = windows.get(key)
    return window && window.resetAt > unixSeconds(clock) ? window : undefined
  }
  return {
    get size() {
      return windows.size
    },
    hit(key, decaySeconds) {
      const now = unixSeconds(clock)
      expire(now)
      let window = current(key)
      if (!window) {
        window = { attempts: 0, resetAt: now + decaySeconds }
        forget(key)
        windows.set(key, window)
        const keys = endingAt.get(window.resetAt)
        if (keys) keys.add(key)
        else endingAt.set(window.resetAt, new Set([key]))
        if (windows.size > maxWindows) forget(windows.keys().next().value as string)
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
      forget(key)
    },
  }
}
