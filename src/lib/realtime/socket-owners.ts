import type { Redis } from 'ioredis'

/**
 * Whose each socket is (the first user granted a channel on it), for the auth routes of the
 * instances that do not hold it: they refuse to sign for another user's socket. The instance
 * holding the socket is the judge (it ignores a grant from anyone but the owner); this record
 * only lets the others answer 403 rather than sign something that will do nothing.
 */
export interface SocketOwners {
  /** A socket of this instance is `userId`'s: told at each of their grants (its expiry starts again). */
  claimed(socketId: string, userId: string): void
  /** A socket of this instance closed, or has none of its owner's grants left. */
  released(socketId: string): void
  /** The user another instance's socket belongs to, when that instance recorded one. */
  ownerOf(socketId: string): Promise<string | undefined>
}

/** One instance: the hub holds every socket and knows its owner; nothing to share. */
export const localSocketOwners: SocketOwners = {
  claimed() {},
  released() {},
  ownerOf: async () => undefined,
}

// A record outlives a crashed instance by a day at most. A socket granted nothing for a day is no
// longer known to the other instances (they sign; its own instance still ignores the grant).
const OWNER_TTL_SECONDS = 86_400

/**
 * Many instances: one key per socket that has an owner, written by the instance holding it. A
 * failed command is reported and answered as "not known" (the holding instance still judges).
 */
export function createRedisSocketOwners(redis: Redis, failed: (error: unknown) => void): SocketOwners {
  const key = (socketId: string) => `realtime:owner:${socketId}`
  return {
    claimed(socketId, userId) {
      redis.set(key(socketId), userId, 'EX', OWNER_TTL_SECONDS).catch(failed)
    },
    released(socketId) {
      redis.del(key(socketId)).catch(failed)
    },
    async ownerOf(socketId) {
      try {
        return (await redis.get(key(socketId))) ?? undefined
      } catch (error) {
        failed(error)
        return undefined
      }
    },
  }
}
