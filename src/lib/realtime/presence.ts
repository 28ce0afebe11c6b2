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
  /** The users this instance records on the channel, with their user_info: known without asking anyone. */
  heldHere(channel: string): Map<string, unknown>
  /** Keeps this instance's records alive, and writes again those the shared store lost. */
  heartbeat(): Promise<void>
  /** Writes every record of this instance again (the shared store came back, maybe empty). */
  rewrite(): Promise<void>
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
    heldHere: (channel) => new Map(channels.get(channel) ?? []),
    heartbeat: async () => {},
    rewrite: async () => {},
    close: async () => {},
  }
}

/** A pipeline's or transaction's answers, or the first command's error (ioredis resolves with them). */
async function answers(pending: Promise<[Error | null, unknown][] | null>): Promise<unknown[]> {
  const results = (await pending) ?? []
  for (const [error] of results) if (error) throw error
  return results.map(([, value]) => value)
}

/**
 * Many instances: `presence:{channel}:{instance}` is a hash (user id -> user_info JSON) that this
 * instance alone writes and keeps alive with a TTL; `presence:{channel}:instances` lists who may
 * hold records. A crashed instance's hashes expire after `ttlSeconds`, and its users with them.
 * This instance keeps its own records in memory too, so that whatever Redis loses (a restart, a
 * write that failed while it was away) is written again: at once on `rewrite` (Redis is back), and
 * at each heartbeat for a hash whose size is not that of the records (two O(1) commands per channel).
 */
export function createRedisPresence(redis: Redis, instanceId: string, ttlSeconds: number): PresenceStore {
  const mine = (channel: string) => `presence:${channel}:${instanceId}`
  const instancesOf = (channel: string) => `presence:${channel}:instances`
  // This instance's records (user id -> user_info JSON) by channel, as Redis should hold them.
  const records = new Map<string, Map<string, string>>()
  // Channels whose hash may differ from the records: a write to it failed.
  const unsure = new Set<string>()

  /** Runs the write; if it fails, the channel's hash is written whole at the next heartbeat. */
  const writing = async <T>(channel: string, write: Promise<T>): Promise<T> => {
    try {
      return await write
    } catch (error) {
      unsure.add(channel)
      throw error
    }
  }

  /** Writes the channels' hashes whole (or deletes them when no record is left), in one transaction. */
  async function writeWhole(channels: Iterable<string>) {
    const written = [...channels]
    if (written.length === 0) return
    const transaction = redis.multi()
    for (const channel of written) {
      const held = records.get(channel)
      transaction.del(mine(channel))
      if (held && held.size > 0) {
        transaction
          .hset(mine(channel), Object.fromEntries(held))
          .expire(mine(channel), ttlSeconds)
          .sadd(instancesOf(channel), instanceId)
          .expire(instancesOf(channel), ttlSeconds * 4)
      } else transaction.srem(instancesOf(channel), instanceId)
    }
    await answers(transaction.exec())
    for (const channel of written) unsure.delete(channel)
  }

  /** Every live instance's record of the channel (dropping instances whose records expired). */
  async function recordsOf(channel: string): Promise<Map<string, Record<string, string>>> {
    const instances = await redis.smembers(instancesOf(channel))
    const pipeline = redis.pipeline()
    for (const instance of instances) pipeline.hgetall(`presence:${channel}:${instance}`)
    const hashes = (await answers(pipeline.exec())) as Record<string, string>[]
    const live = new Map<string, Record<string, string>>()
    const gone: string[] = []
    instances.forEach((instance, i) => {
      const hash = hashes[i] ?? {}
      if (Object.keys(hash).length > 0) live.set(instance, hash)
      else if (instance !== instanceId) gone.push(instance)
    })
    if (gone.length > 0) await redis.srem(instancesOf(channel), ...gone)
    return live
  }

  const elsewhere = async (channel: string, userId: string) => {
    for (const [instance, hash] of await recordsOf(channel)) {
      if (instance !== instanceId && userId in hash) return true
    }
    return false
  }

  return {
    async join(channel, userId, info) {
      const held = records.get(channel) ?? new Map<string, string>()
      records.set(channel, held)
      held.set(userId, JSON.stringify(info ?? null))
      await writing(
        channel,
        answers(
          redis
            .multi()
            .hset(mine(channel), userId, held.get(userId) as string)
            .expire(mine(channel), ttlSeconds)
            .sadd(instancesOf(channel), instanceId)
            .expire(instancesOf(channel), ttlSeconds * 4)
            .exec(),
        ),
      )
      return !(await elsewhere(channel, userId))
    },

    async leave(channel, userId) {
      const held = records.get(channel)
      held?.delete(userId)
      if (held?.size === 0) records.delete(channel)
      await writing(channel, redis.hdel(mine(channel), userId))
      return !(await elsewhere(channel, userId))
    },

    async members(channel) {
      const members = new Map<string, unknown>()
      for (const hash of (await recordsOf(channel)).values()) {
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
      for (const values of (await answers(pipeline.exec())) as (string | null)[][]) {
        values.forEach((value, i) => {
          if (value !== null) found.add(userIds[i] as string)
        })
      }
      return found
    },

    heldHere(channel) {
      const members = new Map<string, unknown>()
      for (const [userId, info] of records.get(channel) ?? []) members.set(userId, JSON.parse(info))
      return members
    },

    async heartbeat() {
      if (records.size === 0 && unsure.size === 0) return
      const channels = [...records.keys()]
      const pipeline = redis.pipeline()
      for (const channel of channels) {
        pipeline.expire(mine(channel), ttlSeconds)
        pipeline.hlen(mine(channel))
        pipeline.sadd(instancesOf(channel), instanceId)
        pipeline.expire(instancesOf(channel), ttlSeconds * 4)
      }
      const results = await answers(pipeline.exec())
      // A hash that is gone or holds other users than this instance's (Redis restarted, a write
      // failed): written whole.
      const stale = new Set(unsure)
      channels.forEach((channel, i) => {
        if (results[i * 4 + 1] !== records.get(channel)?.size) stale.add(channel)
      })
      if (stale.size > 0) await writeWhole(stale)
    },

    async rewrite() {
      await writeWhole(new Set([...records.keys(), ...unsure]))
    },

    async close() {
      // A clean stop removes its records at once rather than waiting for them to expire.
      const channels = new Set([...records.keys(), ...unsure])
      records.clear()
      if (channels.size > 0) await writeWhole(channels)
    },
  }
}
