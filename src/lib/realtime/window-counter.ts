/**
 * Counts hits per key in fixed windows (Laravel's RateLimiter: a window opens at a key's first hit).
 * Keys whose window has ended are dropped by `prune`, so the map holds only recent senders.
 */
export function createWindowCounter(windowMs: number) {
  const windows = new Map<string, { start: number; count: number }>()
  return {
    /** Counts one hit and answers its number within the key's current window (1 for the first). */
    take(key: string, now: number): number {
      let window = windows.get(key)
      if (!window || now - window.start >= windowMs) {
        window = { start: now, count: 0 }
        windows.set(key, window)
      }
      return ++window.count
    },
    forget(key: string): void {
      windows.delete(key)
    },
    prune(now: number): void {
      for (const [key, window] of windows) if (now - window.start >= windowMs) windows.delete(key)
    },
  }
}
