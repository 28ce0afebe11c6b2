import { LRUCache } from 'lru-cache'

/**
 * How long a resolved session (its row and its user's) is reused without asking the database.
 * Every change made through this process drops the entry at once, and other instances hear of it
 * over Redis within milliseconds; the lifetime only bounds what nobody announces (a write made
 * outside the app, a lost pub/sub message). Short, because that is the window such a change
 * (a block done by hand in SQL, say) would go unnoticed; long enough that a busy session asks
 * the database about once a second rather than on every request.
 */
export const SESSION_CACHE_TTL_MS = 1000
// A bound on memory: far more sessions than are active within one TTL on one instance.
const MAX_ENTRIES = 10_000

export interface CachedSession<S, U> {
  session: S
  user: U | undefined
}

/**
 * Resolved sessions by row id (the token's hash), for SESSION_CACHE_TTL_MS. `begin()` before the
 * database read and `store(…, began)` after it: a load that overlapped an invalidation of its
 * session or user (or a user change within the last TTL, which may be a transaction not yet
 * committed when it was announced) is not stored, so the cache never outlives a change it was told of.
 */
export function createSessionCache<S, U>(userIdOf: (entry: CachedSession<S, U>) => number | null) {
  const entries = new LRUCache<string, CachedSession<S, U>>({ max: MAX_ENTRIES, ttl: SESSION_CACHE_TTL_MS })
  // When a session id or user was last invalidated (`s:` + id, `u:` + user id), kept for one TTL.
  const changed = new LRUCache<string, number>({ max: MAX_ENTRIES, ttl: SESSION_CACHE_TTL_MS })
  const now = () => performance.now()

  return {
    get: (id: string) => entries.get(id),
    begin: now,

    store(id: string, entry: CachedSession<S, U>, began: number): void {
      const userId = userIdOf(entry)
      const sessionChanged = changed.get(`s:${id}`)
      if (sessionChanged !== undefined && sessionChanged >= began) return
      // Any user change within one TTL: its transaction may have committed only after this read.
      if (userId !== null && changed.has(`u:${userId}`)) return
      entries.set(id, entry)
    },

    forgetSession(id: string): void {
      entries.delete(id)
      changed.set(`s:${id}`, now())
    },

    forgetUser(userId: number): void {
      changed.set(`u:${userId}`, now())
      for (const [id, entry] of entries.entries()) if (userIdOf(entry) === userId) entries.delete(id)
    },

    clear: () => entries.clear(),
  }
}
