/** A fixed-window counter: each hit counts one attempt in the key's current window. */
export interface RateLimitStore {
  /** Counts one attempt; answers the attempts in the window so far and when the window ends (unix s). */
  hit(key: string, decaySeconds: number): Promise<{ attempts: number; resetAt: number }>
  clear(key: string): Promise<void>
}
