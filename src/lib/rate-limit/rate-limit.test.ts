import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { createTestClock } from '../../../test/helpers/clock.ts'
import { createUser } from '../../../test/helpers/factories.ts'
import { createMemoryRateLimitStore } from './memory.ts'
import { createRedisRateLimitStore } from './redis.ts'
import type { RateLimitStore } from './store.ts'

const redisUrl = process.env.TEST_REDIS_URL
const redisClients: Redis[] = []
function redisClient(): Redis {
  const client = new Redis(redisUrl ?? '', { keyPrefix: `test:${randomBytes(4).toString('hex')}:` })
  redisClients.push(client)
  return client
}
afterAll(async () => {
  await Promise.all(redisClients.map((c) => c.quit()))
})

// One contract, every driver: the Redis one joins when the run has a Redis (CI's PostgreSQL+Redis run).
const drivers: [string, (clock: ReturnType<typeof createTestClock>) => RateLimitStore][] = [
  ['memory', (clock) => createMemoryRateLimitStore(clock)],
  ...(redisUrl
    ? [
        ['redis', (clock) => createRedisRateLimitStore(redisClient(), clock)] as [
          string,
          typeof createMemoryRateLimitStore,
        ],
      ]
    : []),
]

describe.each(drivers)('rate-limit store: %s', (_name, makeStore) => {
  it('counts attempts per key within one window', async () => {
    const store = makeStore(createTestClock())
    expect((await store.hit('a', 60)).attempts).toBe(1)
    expect((await store.hit('a', 60)).attempts).toBe(2)
    expect((await store.hit('b', 60)).attempts).toBe(1)
  })

  it('answers when the window ends', async () => {
    const clock = createTestClock()
    const store = makeStore(clock)
    const { resetAt } = await store.hit('w', 60)
    const now = Math.floor(clock.nowMs() / 1000)
    expect(resetAt).toBeGreaterThanOrEqual(now + 59)
    expect(resetAt).toBeLessThanOrEqual(now + 60)
  })

  it('forgets a cleared key', async () => {
    const store = makeStore(createTestClock())
    await store.hit('c', 60)
    await store.clear('c')
    expect((await store.hit('c', 60)).attempts).toBe(1)
  })

  it('peeks at a window without counting, and answers null for a key never hit', async () => {
    const clock = createTestClock()
    const store = makeStore(clock)
    expect(await store.peek('p')).toBeNull()
    const { resetAt } = await store.hit('p', 60)
    await store.hit('p', 60)
    expect(await store.peek('p')).toEqual({ attempts: 2, resetAt })
    expect(await store.peek('p')).toEqual({ attempts: 2, resetAt })
    expect((await store.hit('p', 60)).attempts).toBe(3)
  })

  it('refunds one attempt of the current window, never below 0, and starts none', async () => {
    const store = makeStore(createTestClock())
    await store.hit('r', 60)
    await store.hit('r', 60)
    await store.refund('r')
    expect((await store.peek('r'))?.attempts).toBe(1)
    await store.refund('r')
    await store.refund('r')
    expect((await store.peek('r'))?.attempts).toBe(0)
    expect((await store.hit('r', 60)).attempts).toBe(1)
    await store.refund('never-hit')
    expect(await store.peek('never-hit')).toBeNull()
  })

  it('counts concurrent hits exactly', async () => {
    const store = makeStore(createTestClock())
    const results = await Promise.all(Array.from({ length: 50 }, () => store.hit('burst', 60)))
    expect(results.map((r) => r.attempts).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    )
  })
})

describe('memory store windows', () => {
  it('starts a new window once the old one has passed', async () => {
    const clock = createTestClock()
    const store = createMemoryRateLimitStore(clock)
    await store.hit('k', 60)
    await store.hit('k', 60)
    clock.advance(60_000)
    expect((await store.hit('k', 60)).attempts).toBe(1)
  })

  // Issue 25 item 11: the old store swept only past 10,000 windows, scanning all of them per hit.
  it('deletes passed windows as time goes on, however few are live', async () => {
    const clock = createTestClock()
    const store = createMemoryRateLimitStore(clock)
    for (let i = 0; i < 5_000; i += 1) store.hit(`short:${i}`, 60)
    for (let i = 0; i < 5_000; i += 1) store.hit(`long:${i}`, 600)
    clock.advance(61_000)
    store.hit('next', 60)
    expect(store.size).toBe(5_001)
    clock.advance(600_000)
    store.hit('later', 60)
    expect(store.size).toBe(1)
  })

  it('holds at most maxWindows windows, dropping the oldest', async () => {
    const clock = createTestClock()
    const store = createMemoryRateLimitStore(clock, { maxWindows: 100 })
    store.hit('oldest', 60)
    for (let i = 0; i < 150; i += 1) store.hit(`flood:${i}`, 60)
    expect(store.size).toBe(100)
    expect(await store.peek('oldest')).toBeNull()
    expect(await store.peek('flood:149')).toMatchObject({ attempts: 1 })
  })

  it('keeps a window cleared and hit again until its own end', async () => {
    const clock = createTestClock()
    const store = createMemoryRateLimitStore(clock)
    store.hit('k', 60)
    clock.advance(30_000)
    await store.clear('k')
    store.hit('k', 60)
    clock.advance(31_000)
    expect(store.hit('k', 60).attempts).toBe(2)
  })

  it('peeks and refunds nothing once the window has passed', async () => {
    const clock = createTestClock()
    const store = createMemoryRateLimitStore(clock)
    await store.hit('k', 60)
    clock.advance(60_000)
    await store.refund('k')
    expect(await store.peek('k')).toBeNull()
  })
})

describe.each(redisUrl ? ['redis'] : [])('login throttle across instances (%s)', () => {
  it('shares one window between two app instances', async () => {
    const shared = `test:${randomBytes(4).toString('hex')}:`
    const a = await buildTestApp({ redis: new Redis(redisUrl ?? '', { keyPrefix: shared }) })
    const b = await buildTestApp({
      redis: new Redis(redisUrl ?? '', { keyPrefix: shared }),
      database: a.database,
    })
    try {
      const { user } = await createUser(a.database.db)
      for (const t of [a, b, a, b, a]) {
        const res = await new TestClient(t.baseUrl).post('/api/login', {
          email: user.email,
          password: 'wrong-one',
        })
        expect(res.status).toBe(422)
      }
      const sixth = await new TestClient(b.baseUrl).post('/api/login', {
        email: user.email,
        password: 'wrong-one',
      })
      expect(sixth.status).toBe(429)
    } finally {
      await b.app.close().catch(() => {})
      await a.close()
    }
  })
})
