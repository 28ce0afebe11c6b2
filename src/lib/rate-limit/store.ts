/** A window's count: the attempts so far and when the window ends (unix seconds). */
export interface RateLimitWindow {
  attempts: number
  resetAt: number
}

/** A fixed-window counter: each hit counts one attempt in the key's current window. */
export interface RateLimitStore {
  /**
   * Counts one attempt; answers the attempts in the window so far and when the window ends (unix s).
   * A store in this process answers at once, without a promise: every throttled request asks.
   */
  hit(key: string, decaySeconds: number): RateLimitWindow | Promise<RateLimitWindow>
  /** The key's current window without counting anything; null when it has none (never hit, or passed). */
  peek(key: string): Promise<RateLimitWindow | null>
  /** Takes one attempt back from the key's current window (never below 0); nothing when it has none. */
  refund(key: string): Promise<void>
  clear(key: string): Promise<void>
}

/** A store in this process: it counts and gives back at once. */
export interface InProcessRateLimitStore extends RateLimitStore {
  hit(key: string, decaySeconds: number): RateLimitWindow
  /** `refund`, settled before it returns. */
  refundNow(key: string): void
}
