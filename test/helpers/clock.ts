import type { Clock } from '../../src/lib/clock.ts'

/** A clock that stands still until a test moves it. */
export function createTestClock(start = new Date()): Clock & { advance(ms: number): void } {
  let now = start.getTime()
  return {
    now: () => new Date(now),
    nowMs: () => now,
    advance(ms: number) {
      now += ms
    },
  }
}

export const minutes = (n: number) => n * 60_000
