/** The time source; injected so tests can move time instead of waiting. */
export interface Clock {
  now(): Date
  /** The same instant in milliseconds, without a Date (hot paths read it on every request). */
  nowMs(): number
}

export const systemClock: Clock = { now: () => new Date(), nowMs: Date.now }

export const unixSeconds = (clock: Clock) => Math.floor(clock.nowMs() / 1000)
