import type { Redis } from 'ioredis'

/**
 * Who is on a presence channel (and who is online: the same records under one synthetic channel),
 * across instances. Each instance records only the users of its own sockets; a user is present
 * while any instance records them. The hub counts a user's sockets itself and calls `join` for
 * their first socket on this instance and `leave` after their last.
 */
export interface PresenceStore {
  /** Records the user here; true when no instance had them before (announce member_added). */
  join(channel: string, userId: string, info: unknown): Promise<boolean>
  /** Forgets the user here; true when no instance has them any more (announce member_removed). */
  leave(channel: string, userId: string): Promise<boolean>
  /** Everyone on the channel, on any live instance, with their user_info. */
  members(channel: string): Promise<Map<string, unknown>>
  /** Which of these users are on the channel, on any live instance. */
  present(channel: string, userIds: string[]): Promise<Set<string>>
  /** Keeps this instance's records alive (Redis: they expire when it stops doing so). */
  heartbeat(): Promise<void>
  close(): Promise<void>
}

/** One instance: everything in memory. */
export function createMemoryPresence(): PresenceStore {
  const channels = new Map<string, Map<string, unknown>>()
  return {
    async join(channel, userId, info) {
      const members = channels.get(channel) ?? new Map()
      channels.set(channel, members)
      const first = !members.has(userId)
      members.set(userId, info)
      return first
    },
    async leave(channel, userId) {
      const members = channels.get(channel)
      const had = members?.delete(userId) ?? false
      if (members?.size === 0) channels.delete(channel)
      return had
    },
    members: async (channel) => new Map(channels.get(channel) ?? []),
    async present(channel, userIds) {
      const members = channels.get(channel)
      return new Set(userIds.filter((id) => members?.has(id)))
    },
    heartbeat: async () => {},
    close: async () => {},
  }
}

/**
 * Many instances: `presence:{channel}:{instance}` is a hash (user id -> user_info JSON) that this
 * instance alone writes and keeps alive with a TTL; `presence:{channel}:instances` lists who may
 * hold records. A crashed instance's hashes expire after `ttlSeconds`, and its users with them.
 */
export function createRedisPresence(redis: Redis, instanceId: string, ttlSeconds: number): PresenceStore {
  const mine = (channel: string) => `presence:${channel}:${instanceId}`
  const instancesOf = (channel: string) => `presence:${channel}:instances`
  // The channels this instance holds records for, to keep alive.
  const held = new Set<string>()

  /** Every live instance's record of the channel (dropping instances whose records expired). */
  async function records(channel: string): Promise<Map<string, Record<string, string>>> {
    const instances = await redis.smembers(instancesOf(channel))
    const pipeline = redis.pipeline()
    for (const instance of instances) pipeline.hgetall(`presence:${channel}:${instance}`)
    const results = (await pipeline.exec()) ?? []
    const live = new Map<string, Record<string, string>>()
    const gone: string[] = []
    instances.forEach((instance, i) => {
      const hash = (results[i]?.[1] ?? {}) as Record<string, string>
      if (Object.keys(hash).length > 0) live.set(instance, hash)
      else if (instance !== instanceId) gone.push(instance)
    })
    if (gone.length > 0) await redis.srem(instancesOf(channel), ...gone)
    return live
  }

  const elsewhere = async (channel: string, userId: string) => {
    for (const [instance, hash] of await records(channel)) {
      if (instance !== instanceId && userId in hash) return true
    }
    return false
  }

  return {
    async join(channel, userId, info) {
      held.add(channel)
      await redis
        .multi()
        .hset(mine(channel), userId, JSON.stringify(info ?? null))
        .expire(mine(channel), ttlSeconds)
        .sadd(instancesOf(channel), instanceId)
        .expire(instancesOf(channel), ttlSeconds * 4)
        .exec()
      return !(await elsewhere(channel, userId))
    },

    async leave(channel, userId) {
      await redis.hdel(mine(channel), userId)
      if ((await redis.hlen(mine(channel))) === 0) held.delete(channel)
      return !(await elsewhere(channel, userId))
    },

    async members(channel) {
      const members = new Map<string, unknown>()
      for (const hash of (await records(channel)).values()) {
        for (const [userId, info] of Object.entries(hash)) members.set(userId, JSON.parse(info))
      }
      return members
    },

    async present(channel, userIds) {
      const found = new Set<string>()
      if (userIds.length === 0) return found
      // Only the users asked about: the online channel holds everyone online.
      const instances = await redis.smembers(instancesOf(channel))
      const pipeline = redis.pipeline()
      for (const instance of instances) pipeline.hmget(`presence:${channel}:${instance}`, ...userIds)
      for (const [, values] of (await pipeline.exec()) ?? []) {
        ;(values as (string | null)[]).forEach((value, i) => {
          if (value !== null) found.add(userIds[i] as string)
        })
      }
      return found
    },

    async heartbeat() {
      if (held.size === 0) return
      const pipeline = redis.pipeline()
      for (const channel of held) {
        pipeline.expire(mine(channel), ttlSeconds)
        pipeline.sadd(instancesOf(channel), instanceId)
        pipeline.expire(instancesOf(channel), ttlSeconds * 4)
      }
      await pipeline.exec()
    },

    async close() {
      // A clean stop removes its records at once rather than waiting for them to expire.
      if (held.size === 0) return
      const pipeline = redis.pipeline()
      for (const channel of held) {
        pipeline.del(mine(channel))
        pipeline.srem(instancesOf(channel), instanceId)
      }
      held.clear()
      await pipeline.exec()
    },
  }
}
