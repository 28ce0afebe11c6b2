import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { RedisAvailability } from './redis/health.ts'
import { subscribeToChannel } from './redis/subscription.ts'

interface Announcement {
  from?: unknown
  sessions?: unknown
  users?: unknown
}

export interface SessionFanOut {
  /** Settles once other instances' announcements are heard (or Redis failed: heard once it is back). */
  readonly subscribed: Promise<void>
  publish(what: { sessions?: string[]; users?: number[] }): Promise<void>
  close(): Promise<void>
}

/**
 * Tells the other instances (over Redis pub/sub, when there is Redis) which cached sessions and users
 * to drop, and drops the ones they announce. Publishing resolves once Redis has queued the message
 * for every subscriber, so another instance has it before the change's answer reaches the caller;
 * it acts when its event loop next reads that connection (milliseconds), and SESSION_CACHE_TTL_MS
 * bounds the rest: a lost message, and every change made while Redis is down (then nothing is
 * published, and no request waits on it).
 */
export function createSessionFanOut(
  redis: Redis | null,
  cache: { forgetSession(id: string): void; forgetUser(userId: number): void },
  availability: RedisAvailability,
): SessionFanOut {
  if (!redis) return { subscribed: Promise.resolve(), publish: async () => {}, close: async () => {} }
  const channel = `${redis.options.keyPrefix ?? ''}sessions:invalidated`
  // Our own announcements come back too; the local cache already acted on them.
  const instanceId = randomUUID()
  const subscription = subscribeToChannel(
    redis,
    channel,
    (message) => {
      let announced: Announcement
      try {
        announced = JSON.parse(message)
      } catch {
        return
      }
      if (announced.from === instanceId) return
      for (const id of [announced.sessions ?? []].flat()) if (typeof id === 'string') cache.forgetSession(id)
      for (const id of [announced.users ?? []].flat())
        if (Number.isSafeInteger(id)) cache.forgetUser(id as number)
    },
    (error) => availability.failed(error),
  )
  return {
    subscribed: subscription.subscribed,
    async publish(what) {
      if (!availability.isUp()) return
      // The change itself is done; other instances' entries expire within SESSION_CACHE_TTL_MS.
      await redis.publish(channel, JSON.stringify({ from: instanceId, ...what })).catch(availability.failed)
    },
    close: () => subscription.close(),
  }
}
