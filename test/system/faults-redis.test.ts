import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestClient } from '../helpers/client.ts'
import { connected, echoAt, eventually, settle } from '../helpers/echo.ts'
import { type FaultStack, printFault, startFaultStack, startLoad } from './fault-stack.ts'

/**
 * Redis stopped for 20 s under the deployment (nginx over two instances) while signed-in clients
 * keep reading and writing and sockets sit on a presence channel: no request waits on Redis past
 * a second or gets a 500 for it; each instance logs the loss and the return once; once Redis is
 * back (empty), presence is whole again within a heartbeat and no one was told a member left.
 */

const OUTAGE_MS = 20_000
// Heartbeat every TTL/4 = 1 s (plugins/realtime.ts), so "within one heartbeat" is measurable here.
const TTL_SECONDS = 4
const HEARTBEAT_MS = (TTL_SECONDS * 1000) / 4
// The Redis client tries again at least every second (lib/redis/client.ts).
const RECONNECT_MS = 1000

let faults: FaultStack
const echoes: Array<ReturnType<typeof echoAt>> = []

beforeAll(async () => {
  faults = await startFaultStack({ REVERB_INSTANCE_TTL_SECONDS: String(TTL_SECONDS) })
}, 120_000)
afterAll(async () => {
  for (const echo of echoes) echo.disconnect()
  await faults?.stop()
})

/** Echo's presence callbacks on the channel, recorded. */
function watchPresence(echo: ReturnType<typeof echoAt>, channel: string) {
  const seen = { here: undefined as number[] | undefined, leaving: [] as number[] }
  echo
    .join(channel)
    .here((users: { id: number }[]) => {
      seen.here = users.map((user) => user.id)
    })
    .leaving((user: { id: number }) => seen.leaving.push(user.id))
  return seen
}

/** The users every instance's records in Redis show on the channel (the check reads Redis itself). */
async function presentInRedis(channel: string): Promise<number[]> {
  const prefix = faults.stack.env.REDIS_PREFIX
  const reader = new Redis(faults.redis.url, { keyPrefix: prefix, maxRetriesPerRequest: 0 })
  reader.on('error', () => {})
  try {
    const users = new Set<number>()
    for (const instance of await reader.smembers(`presence:${channel}:instances`)) {
      for (const id of await reader.hkeys(`presence:${channel}:${instance}`)) users.add(Number(id))
    }
    return [...users]
  } finally {
    reader.disconnect()
  }
}

const same = (ids: number[], expected: number[]) =>
  JSON.stringify([...ids].sort((x, y) => x - y)) === JSON.stringify(expected)

/** The instance's structured log lines with this message. */
const linesSaying = (output: string, message: string) =>
  output.split('\n').filter((line) => line.startsWith('{') && JSON.parse(line).msg === message)

/**
 * In turn: a read that needs no Redis, a cached and throttled upstream read, and a throttled write
 * that is broadcast to the group's sockets.
 */
const mixed = (client: TestClient, i: number, n: { value: number }, groupId: number) => {
  n.value += 1
  const turn = (n.value + i) % 3
  if (turn === 0) return client.get('/api/user')
  if (turn === 1) return client.get('/api/strategies')
  return client.post('/api/message', { group_id: groupId, body: `message ${n.value}` })
}

describe('Redis stopped for 20 s under load', () => {
  it('keeps every answer under a second past normal and no 500; logs it once each way; presence heals within a heartbeat', async () => {
    const { stack, redis } = faults
    const users = await Promise.all([1, 2, 3, 4].map((n) => faults.signedIn(`Redis Fault ${n}`)))
    const [owner, ...others] = users
    if (!owner) throw new Error('no owner')
    const group = await owner.client.post('/api/group', { name: 'Redis outage' })
    expect(group.status, group.text).toBe(201)
    const groupId = group.data.data.id as number
    for (const member of others)
      expect((await member.client.post(`/api/group/${groupId}/join`)).status).toBe(200)

    // A socket per user through nginx (round robin: both instances hold some), each on its user
    // channel (online status) and the group's presence channel.
    const seen = users.map((user) => {
      const echo = echoAt(stack.nginx.url, stack.realtimeKey, user.client)
      echoes.push(echo)
      echo.private(`App.Models.User.${user.id}`)
      return watchPresence(echo, `chat.group.${groupId}`)
    })
    await Promise.all(echoes.map((echo) => connected(echo)))
    const everyone = users.map((user) => user.id).sort((x, y) => x - y)
    await eventually(() => seen.every((s) => s.here), 10_000)
    const checker = owner.client
    const status = async (id: number) => (await checker.get(`/api/user/${id}/status`)).data.data?.online
    const allOnline = async () => (await Promise.all(everyone.map(status))).every(Boolean)
    await eventually(allOnline, 10_000)

    // What normal looks like on this machine now.
    const count = { value: 0 }
    const baseline = startLoad(
      users.map((user) => user.client),
      (client, i) => mixed(client, i, count, groupId),
    )
    await settle(3000)
    const normal = await baseline.stop()

    const load = startLoad(
      users.map((user) => user.client),
      (client, i) => mixed(client, i, count, groupId),
      { slowMs: normal.maxMs + 1000 },
    )
    await redis.stop()
    await settle(OUTAGE_MS)
    await redis.start()
    const backAt = Date.now()
    // Presence in Redis: every instance's members written again (an instance not yet reconnected
    // answers from its own sockets alone, so the answers are checked once it is whole).
    await eventually(
      async () =>
        same(await presentInRedis(`presence-chat.group.${groupId}`), everyone) &&
        same(await presentInRedis('#online'), everyone),
      10_000,
    )
    const presenceWholeMs = Date.now() - backAt
    expect(await allOnline()).toBe(true)
    const fresh = echoAt(stack.nginx.url, stack.realtimeKey, owner.client)
    echoes.push(fresh)
    const freshSeen = watchPresence(fresh, `chat.group.${groupId}`)
    const listed = await eventually(() => freshSeen.here, 10_000)
    // Both instances said Redis is back (their own reconnect).
    await eventually(
      () => stack.instances.every((i) => linesSaying(i.output(), 'redis available again').length > 0),
      10_000,
    )
    const recoveryMs = Date.now() - backAt
    // Load a while past the return, and past the grace for members missing from Redis.
    await settle(HEARTBEAT_MS + RECONNECT_MS + 2 * HEARTBEAT_MS)
    const report = await load.stop()
    printFault('redis stopped 20 s', report, {
      normalMaxMs: normal.maxMs,
      recoveryMs,
      presenceWholeMs,
      falseLeaves: seen.flatMap((s) => s.leaving),
    })

    const failures = Object.entries(report.byStatus).filter(([code]) => !/^[234]\d\d$/.test(code))
    expect(failures, JSON.stringify(report)).toEqual([])
    expect(report.slow, JSON.stringify(report)).toBe(0)
    expect(report.maxMs).toBeLessThanOrEqual(normal.maxMs + 1000)
    expect(presenceWholeMs).toBeLessThanOrEqual(RECONNECT_MS + HEARTBEAT_MS + 1000)
    expect([...listed].sort((x, y) => x - y)).toEqual(everyone)
    expect(seen.map((s) => s.leaving)).toEqual(users.map(() => []))
    for (const instance of stack.instances) {
      const output = instance.output()
      // On a failure, the instance's lines about Redis tell what it saw.
      const told = `${instance.name}:\n${output
        .split('\n')
        .filter((line) => /redis/i.test(line))
        .join('\n')}`
      expect(linesSaying(output, 'redis unavailable'), told).toHaveLength(1)
      expect(linesSaying(output, 'redis available again'), told).toHaveLength(1)
      expect(output).not.toContain('[ioredis]')
    }
  }, 90_000)
})
