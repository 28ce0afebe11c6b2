import type { PresenceStore } from './presence.ts'

/**
 * This instance's sockets per user and presence channel, in front of the shared store: only a
 * user's first socket here joins the store, and only their last one leaves it, so the store (and
 * every instance's subscribers) sees users, not sockets.
 */
export function createLocalMembers(presence: PresenceStore) {
  const counts = new Map<string, Map<string, number>>()

  /** Counts one more (or less) local socket of the user; answers the count after. */
  function count(channel: string, userId: string, delta: 1 | -1): number {
    const users = counts.get(channel) ?? new Map<string, number>()
    counts.set(channel, users)
    const next = (users.get(userId) ?? 0) + delta
    if (next > 0) users.set(userId, next)
    else users.delete(userId)
    if (users.size === 0) counts.delete(channel)
    return next
  }

  return {
    /** A socket of the user joined; true when the user is new to the channel on every instance. */
    async joined(channel: string, userId: string, info: unknown): Promise<boolean> {
      if (count(channel, userId, 1) > 1) return false
      return presence.join(channel, userId, info)
    },

    /** A socket of the user left; true when the user is gone from the channel on every instance. */
    async left(channel: string, userId: string): Promise<boolean> {
      if (count(channel, userId, -1) > 0) return false
      return presence.leave(channel, userId)
    },
  }
}
