/** The time source; injected so tests can move time instead of waiting. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

export const unixSeconds = (clock: Clock) => Math.floor(clock.now().getTime() / 1000)
