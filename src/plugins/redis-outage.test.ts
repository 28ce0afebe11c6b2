import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest'
import type { TestApp } from '../../test/helpers/build-test-app.ts'
import { createGroup, joinGroup } from '../../test/helpers/chat.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { eventually, settle } from '../../test/helpers/echo.ts'
import { createUser, signedInClient } from '../../test/helpers/factories.ts'
import { memoryLog } from '../../test/helpers/memory-log.ts'
import { type OwnRedis, startOwnRedis } from '../../test/helpers/own-redis.ts'
import { parseSamples, sampleValue } from '../../test/helpers/prometheus.ts'
import { upstreamEnv } from '../../test/helpers/proxy.ts'
import { PusherSocket } from '../../test/helpers/pusher-socket.ts'
import { sharedDatabase } from '../../test/helpers/test-database.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../test/helpers/under-test.ts'

// Redis stopped under two running instances (a Redis of this test's own, never the shared one):
// requests go on without it, quickly and without a 500; its loss and return are one log line each;
// once it is back, everything uses it again by itself, and presence is whole again.

const METRICS_TOKEN = 'redis-outage-metrics-token'
const READS_PER_MINUTE = 6
// Each instance's heartbeat runs every TTL/4: 500 ms.
const TTL_SECONDS = 2
const HEARTBEAT_MS = (TTL_SECONDS * 1000) / 4
// The client reconnects within a second of Redis answering again (lib/redis/client.ts).
const RECONNECT_MS = 1000

let own: OwnRedis
const upstream = fakeUpstreamUnderTest()
const logA = memoryLog()
let env: Record<string, string>
// ioredis prints an error event nobody listens to on stderr, through console.error.
const stderrLines: string[] = []

beforeAll(async () => {
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void stderrLines.push(args.join(' ')))
  own = await startOwnRedis()
  env = {
    ...upstreamEnv(upstream.url),
    REDIS_URL: own.url,
    REDIS_PREFIX: `test:${randomBytes(4).toString('hex')}:`,
    PROXY_READS_PER_MINUTE: String(READS_PER_MINUTE),
    METRICS_TOKEN,
    REVERB_INSTANCE_TTL_SECONDS: String(TTL_SECONDS),
    REVERB_APP_ID: 'outage',
    REVERB_APP_KEY: `key-${randomBytes(6).toString('hex')}`,
    REVERB_APP_SECRET: randomBytes(24).toString('hex'),
  }
}, 60_000)

afterAll(async () => {
  await own?.destroy()
  vi.restoreAllMocks()
})

const a = appUnderTest(() => ({ env, loggerInstance: logA.logger }))
const b = appUnderTest(() => ({ env, database: sharedDatabase(a.database) }))

let redisStopped = false
/** Stops the test's Redis; started again after the test whatever happens, so the next one has it. */
async function stopRedis() {
  await own.stop()
  redisStopped = true
  onTestFinished(async () => {
    if (redisStopped) await startRedis()
  })
}
async function startRedis() {
  await own.start()
  redisStopped = false
}

const linesSaying = (message: string) => logA.lines().filter((line) => line.msg === message)

/** The answer and how long it took. */
async function timed<T>(send: () => Promise<T>): Promise<{ res: T; ms: number }> {
  const began = performance.now()
  const res = await send()
  return { res, ms: performance.now() - began }
}

async function redisUp(t: TestApp): Promise<number> {
  const res = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  return sampleValue(parseSamples(await res.text()), 'trading_api_dependency_up', { dependency: 'redis' })
}

describe('while Redis is down', () => {
  it('answers signed-in reads and writes within a second, throttles in memory, caches in memory; recovers by itself with one log line each way', async () => {
    const { client } = await signedInClient(a, { verified: true })
    upstream.on('GET', '/strategies', { body: { data: [{ id: 1 }] } })
    expect((await client.get('/api/strategies')).headers.get('x-cache')).toBe('MISS')
    expect(await redisUp(a)).toBe(1)

    await stopRedis()
    const calls = upstream.callsTo('GET', '/strategies').length
    const answers = []
    // The upstream read (cached, throttled), the user (session), a write (throttled, invalidating).
    answers.push(await timed(() => client.get('/api/strategies')))
    answers.push(await timed(() => client.get('/api/user')))
    answers.push(await timed(() => client.get('/api/strategies')))
    answers.push(await timed(() => client.post('/api/strategy/1/status/off', {})))
    answers.push(await timed(() => client.get('/api/strategies')))
    for (const { res, ms } of answers) {
      expect(res.status, res.text).toBe(200)
      expect(ms).toBeLessThan(1000)
    }
    // A miss loads from the upstream and is kept in this instance's memory; the write drops it.
    expect(answers.map(({ res }) => res.headers.get('x-cache'))).toEqual(['MISS', null, 'HIT', null, 'MISS'])
    expect(upstream.callsTo('GET', '/strategies').length - calls).toBe(2)

    // Counted in memory from the outage on: past the limit, a read is refused (as quickly).
    const statuses: number[] = []
    while (statuses.length < READS_PER_MINUTE && !statuses.includes(429)) {
      statuses.push((await client.get('/api/strategies')).status)
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([429])
    const refused = await timed(() => client.get('/api/strategies'))
    expect(refused.res.status).toBe(429)
    expect(refused.ms).toBeLessThan(1000)
    expect(await redisUp(a)).toBe(0)

    await startRedis()
    const started = Date.now()
    await eventually(() => linesSaying('redis available again').length > 0, 5000)
    const recoveredMs = Date.now() - started
    expect(recoveredMs).toBeLessThan(RECONNECT_MS + 1000)
    expect(await redisUp(a)).toBe(1)
    // The cache is Redis's again (empty after its restart): a miss, then a hit for everyone.
    const other = await signedInClient(a, { verified: true })
    expect((await other.client.get('/api/strategies')).headers.get('x-cache')).toBe('MISS')
    expect((await client.get('/api/strategies')).status).toBe(200)

    // One line each way, structured; none per request; nothing raw on stderr.
    expect(linesSaying('redis unavailable')).toHaveLength(1)
    expect(linesSaying('redis unavailable')[0]).toMatchObject({ level: 50, dependency: 'redis' })
    expect(linesSaying('redis available again')).toHaveLength(1)
    expect(linesSaying('redis available again')[0]).toMatchObject({ level: 30, dependency: 'redis' })
    const complaints = logA.lines().filter((line) => Number(line.level) >= 40)
    expect(complaints.map((line) => line.msg)).toEqual(['redis unavailable'])
    expect(stderrLines.filter((line) => line.includes('ioredis'))).toEqual([])
  })
})

/** A user signed in through the given instance. */
async function signedInAt(t: TestApp, name: string) {
  const { user, password } = await createUser(a.database.db, { name })
  const client = new TestClient(t.baseUrl)
  const res = await client.post('/api/login', { email: user.email, password })
  if (res.status !== 200) throw new Error(`login answered ${res.status} ${res.text}`)
  return { user, client }
}

/** A socket on the instance, subscribed to each channel with the signature its auth route gives. */
async function socketOn(t: TestApp, client: TestClient, channels: string[]) {
  const socket = await PusherSocket.open(t.baseUrl, t.config.realtime.key)
  for (const channel of channels) {
    const res = await client.post('/api/broadcasting/auth', {
      socket_id: socket.socketId,
      channel_name: channel,
    })
    const reply = await socket.subscribe(channel, res.data.auth, res.data.channel_data)
    if (reply.event !== 'pusher_internal:subscription_succeeded') throw new Error(JSON.stringify(reply))
  }
  return socket
}

describe('after Redis restarts (empty)', () => {
  it('has presence whole again within a heartbeat, and tells no one a member left who did not', async () => {
    const ada = await signedInAt(a, 'Ada on A')
    const bob = await signedInAt(b, 'Bob on B')
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const channel = `presence-chat.group.${group.id}`
    const adaSocket = await socketOn(a, ada.client, [`private-App.Models.User.${ada.user.id}`, channel])
    const bobSocket = await socketOn(b, bob.client, [`private-App.Models.User.${bob.user.id}`, channel])
    try {
      await adaSocket.waitFor((f) => f.event === 'pusher_internal:member_added')
      const status = async (id: number) => (await ada.client.get(`/api/user/${id}/status`)).data.data.online
      expect([await status(ada.user.id), await status(bob.user.id)]).toEqual([true, true])
      const fromA = adaSocket.mark()
      const fromB = bobSocket.mark()

      await stopRedis()
      await settle(2 * HEARTBEAT_MS)
      // This instance's own sockets are known without Redis.
      const during = await timed(() => ada.client.get(`/api/user/${ada.user.id}/status`))
      expect(during.res.status).toBe(200)
      expect(during.res.data.data.online).toBe(true)
      expect(during.ms).toBeLessThan(1000)

      await startRedis()
      const started = Date.now()
      await eventually(async () => (await status(ada.user.id)) && (await status(bob.user.id)), 5000)
      const wholeMs = Date.now() - started
      expect(wholeMs).toBeLessThanOrEqual(RECONNECT_MS + HEARTBEAT_MS + 500)
      // A socket joining now is told of both.
      const cy = await signedInAt(a, 'Cy on A')
      await joinGroup(cy.client, group.id)
      const cySocket = await socketOn(a, cy.client, [channel])
      const listed = cySocket.since(0, 'pusher_internal:subscription_succeeded')[0]?.data as {
        presence: { ids: string[] }
      }
      cySocket.close()
      expect(listed.presence.ids.sort()).toEqual(
        [String(ada.user.id), String(bob.user.id), String(cy.user.id)].sort(),
      )

      // Past the grace for members missing from Redis: still no one was told Ada or Bob left.
      await settle(HEARTBEAT_MS + RECONNECT_MS + 2 * HEARTBEAT_MS)
      const removed = (socket: PusherSocket, from: number) =>
        socket
          .since(from, 'pusher_internal:member_removed')
          .map((f) => (f.data as { user_id: string }).user_id)
          .filter((id) => id !== String(cy.user.id))
      expect(removed(adaSocket, fromA)).toEqual([])
      expect(removed(bobSocket, fromB)).toEqual([])
    } finally {
      adaSocket.close()
      bobSocket.close()
    }
  })
})
