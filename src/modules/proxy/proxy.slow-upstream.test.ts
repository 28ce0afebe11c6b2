import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { TestClient } from '../../../test/helpers/client.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import { heldAnswer } from '../../../test/helpers/fake-upstream.ts'
import { eventuallyPasses } from '../../../test/helpers/passes.ts'
import { parseSamples, sampleValue } from '../../../test/helpers/prometheus.ts'
import { upstreamEnv } from '../../../test/helpers/proxy.ts'
import { withTwoInstances } from '../../../test/helpers/two-instances.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../../test/helpers/under-test.ts'

/**
 * A cached key whose upstream answers slower than its refresh window, and slower than what is left
 * of its TTL, over real HTTP against the fake upstream: its answers are held until the test lets
 * them go, and time is the test clock's. Once cached, no reader waits for the upstream (the old
 * answer is given while the one load runs), and the upstream gets one call for the key at a time,
 * across instances sharing Redis too.
 */

/** Never reached by a held call: the test lets each go long before. */
const TIMEOUT_MS = 5_000
/** Refreshed in its last 2 s: a refresh held 3 s (under the time-out) outlasts it by 1 s or more. */
const TTL_SECONDS = 10
const STALE_SECONDS = 600
const METRICS_TOKEN = 'proxy-slow-upstream-metrics-token'

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({
  env: {
    ...upstreamEnv(fake.url, TIMEOUT_MS),
    CACHE_TTL_SECONDS: String(TTL_SECONDS),
    CACHE_STALE_SECONDS: String(STALE_SECONDS),
    PROXY_READS_PER_MINUTE: '100000',
    METRICS_TOKEN,
  },
}))
let client: TestClient
beforeAll(async () => {
  client = (await signedInClient(t, { verified: true })).client
})
beforeEach(() => fake.reset())

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`
const marketsOf = (market: string) => `/api/markets?market_id=${market}`
const REVALIDATING = (ttl: number) => `trading-api; hit; ttl=${ttl}; detail=stale-while-revalidate`

async function staleAnswers(reason: string) {
  const res = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  return sampleValue(parseSamples(await res.text()), 'trading_api_cache_stale_answers_total', { reason })
}

/** Reads the key `count` times at once; the answers come only if none waits for the held upstream. */
const readers = (count: number, path: string, via = client) =>
  Promise.all(Array.from({ length: count }, () => via.get(path)))

describe('a cached key whose upstream is slower than its refresh window', () => {
  it('is answered at once, old, to every reader while the one refresh runs past its TTL', async () => {
    const market = unique('SLOW')
    fake.on('GET', '/markets', { body: { data: { id: market, price: 1 } } })
    expect((await client.get(marketsOf(market))).headers.get('x-cache')).toBe('MISS')
    const upstream = heldAnswer({ body: { data: { id: market, price: 2 } } })
    fake.on('GET', '/markets', upstream.answer)

    // In the last fifth of its TTL: a hit, and the one background refresh goes out.
    t.clock.advance(TTL_SECONDS * 0.9 * 1000)
    const due = await client.get(marketsOf(market))
    expect([due.data, due.headers.get('x-cache')]).toEqual([{ id: market, price: 1 }, 'HIT'])
    await eventuallyPasses(() => expect(upstream.calls).toBe(1))

    // The refresh outlasts the TTL: readers now get the old answer at once, told it is stale.
    t.clock.advance(3_000)
    const before = await staleAnswers('revalidating')
    for (const res of await readers(8, marketsOf(market))) {
      expect(res.status).toBe(200)
      expect(res.data).toEqual({ id: market, price: 1 })
      expect(res.headers.get('x-cache')).toBe('STALE')
      expect(res.headers.get('cache-status')).toBe(REVALIDATING(-2))
    }
    expect(await staleAnswers('revalidating')).toBe(before + 8)
    expect([upstream.calls, upstream.mostAtOnce]).toEqual([1, 1])

    // The refresh lands: the new answer, fresh for a whole TTL, with no other call.
    upstream.release()
    const fresh = await eventuallyPasses(async () => {
      const res = await client.get(marketsOf(market))
      expect(res.headers.get('x-cache')).toBe('HIT')
      return res
    })
    expect([fresh.data, fresh.headers.get('cache-status')]).toEqual([
      { id: market, price: 2 },
      'trading-api; hit',
    ])
    t.clock.advance(TTL_SECONDS * 0.5 * 1000)
    expect((await client.get(marketsOf(market))).headers.get('x-cache')).toBe('HIT')
    expect(fake.callsTo('GET', '/markets')).toHaveLength(2)
  })

  it('past its TTL with no refresh: the first reader asks the upstream, the others get the old answer meanwhile', async () => {
    const market = unique('QUIET')
    fake.on('GET', '/markets', { body: { data: { id: market, price: 1 } } })
    await client.get(marketsOf(market))
    t.clock.advance((TTL_SECONDS + 5) * 1000)
    const upstream = heldAnswer({ body: { data: { id: market, price: 2 } } })
    fake.on('GET', '/markets', upstream.answer)

    const first = client.get(marketsOf(market))
    await eventuallyPasses(() => expect(upstream.calls).toBe(1))
    for (const res of await readers(5, marketsOf(market))) {
      expect([res.status, res.data]).toEqual([200, { id: market, price: 1 }])
      expect(res.headers.get('x-cache')).toBe('STALE')
      expect(res.headers.get('cache-status')).toBe(REVALIDATING(-5))
    }
    expect([upstream.calls, upstream.mostAtOnce]).toEqual([1, 1])

    upstream.release()
    const answered = await first
    expect([answered.data, answered.headers.get('x-cache')]).toEqual([{ id: market, price: 2 }, 'MISS'])
    expect(answered.headers.get('cache-status')).toBe('trading-api; fwd=stale')
    const next = await client.get(marketsOf(market))
    expect([next.data, next.headers.get('x-cache')]).toEqual([{ id: market, price: 2 }, 'HIT'])
    expect(fake.callsTo('GET', '/markets')).toHaveLength(2)
  })

  it('a refresh that fails leaves nothing refreshing: the next read asks again, under the stale-if-error rules', async () => {
    const market = unique('FAILS')
    fake.on('GET', '/markets', { body: { data: { id: market, price: 1 } } })
    await client.get(marketsOf(market))
    const upstream = heldAnswer({ status: 503, body: { message: 'down for maintenance' } })
    fake.on('GET', '/markets', upstream.answer)
    t.clock.advance(TTL_SECONDS * 0.9 * 1000)
    expect((await client.get(marketsOf(market))).headers.get('x-cache')).toBe('HIT')
    await eventuallyPasses(() => expect(upstream.calls).toBe(1))
    t.clock.advance(3_000)
    expect((await client.get(marketsOf(market))).headers.get('cache-status')).toBe(REVALIDATING(-2))

    // The refresh fails; the next read is sent on and, failing too, answered stale for that reason.
    fake.on('GET', '/markets', { status: 503, body: { message: 'still down' } })
    upstream.release()
    const failed = await eventuallyPasses(async () => {
      const res = await client.get(marketsOf(market))
      expect(res.headers.get('cache-status')).not.toBe(REVALIDATING(-2))
      return res
    })
    expect([failed.status, failed.data, failed.headers.get('x-cache')]).toEqual([
      200,
      { id: market, price: 1 },
      'STALE',
    ])
    expect(failed.headers.get('cache-status')).toBe(
      'trading-api; fwd=stale; fwd-status=503; ttl=-2; detail=stale-if-error',
    )

    // Back: the next read is fresh and kept.
    fake.on('GET', '/markets', { body: { data: { id: market, price: 3 } } })
    const back = await client.get(marketsOf(market))
    expect([back.data, back.headers.get('cache-status')]).toEqual([
      { id: market, price: 3 },
      'trading-api; fwd=stale',
    ])
    expect(fake.callsTo('GET', '/markets')).toHaveLength(4)
  })

  it('answers stale no longer than UPSTREAM_TIMEOUT_MS per load: a load still running then is given up', async () => {
    const market = unique('HUNG')
    fake.on('GET', '/markets', { body: { data: { id: market, price: 1 } } })
    await client.get(marketsOf(market))
    t.clock.advance((TTL_SECONDS + 5) * 1000)
    const upstream = heldAnswer({ body: { data: { id: market, price: 2 } } })
    fake.on('GET', '/markets', upstream.answer)
    const first = client.get(marketsOf(market))
    await eventuallyPasses(() => expect(upstream.calls).toBe(1))
    expect((await client.get(marketsOf(market))).headers.get('cache-status')).toBe(REVALIDATING(-5))

    t.clock.advance(TIMEOUT_MS)
    fake.on('GET', '/markets', { body: { data: { id: market, price: 3 } } })
    const after = await client.get(marketsOf(market))
    expect([after.data, after.headers.get('cache-status')]).toEqual([
      { id: market, price: 3 },
      'trading-api; fwd=stale',
    ])
    upstream.release()
    await first
  })
})

const redisUrl = process.env.TEST_REDIS_URL
// Joins the run when it has a Redis (the PostgreSQL + Redis run). Redis's own clock tells an entry's
// freshness, so these wait in real time: a TTL of 2 s, refreshed in its last 0.4 s.
describe.each(redisUrl ? ['redis'] : [])('with %s, two instances', () => {
  const SHORT_TTL_MS = 2_000
  const env = () => ({
    ...upstreamEnv(fake.url, TIMEOUT_MS),
    CACHE_TTL_SECONDS: String(SHORT_TTL_MS / 1000),
    CACHE_STALE_SECONDS: String(STALE_SECONDS),
    PROXY_READS_PER_MINUTE: '100000',
  })

  /** A user signed in on both instances, for a per-user read (never copied into an instance's memory). */
  async function onBoth(a: Parameters<typeof signedInClient>[0], b: { baseUrl: string }) {
    const { user, password } = await signedInClient(a)
    const onA = new TestClient(a.baseUrl)
    const onB = new TestClient(b.baseUrl)
    for (const c of [onA, onB])
      expect((await c.post('/api/login', { email: user.email, password })).status).toBe(200)
    return [onA, onB] as const
  }
  const until = async (startedAt: number, ms: number) => sleep(Math.max(0, startedAt + ms - Date.now()))

  it('one instance refreshes the key; both answer the old value at once until it lands', async () => {
    await withTwoInstances(redisUrl ?? '', env(), async (a, b) => {
      const [onA, onB] = await onBoth(a, b)
      fake.on('GET', '/strategies', { body: { data: [{ id: 1, version: 1 }] } })
      const cached = await onA.get('/api/strategies')
      const cachedAt = Date.now()
      expect(cached.headers.get('x-cache')).toBe('MISS')
      const upstream = heldAnswer({ body: { data: [{ id: 1, version: 2 }] } })
      fake.on('GET', '/strategies', upstream.answer)

      // In the refresh window: A starts the refresh; B, reading while it runs, starts none.
      await until(cachedAt, SHORT_TTL_MS * 0.85)
      expect((await onA.get('/api/strategies')).headers.get('x-cache')).toBe('HIT')
      await eventuallyPasses(() => expect(upstream.calls).toBe(1))
      expect((await onB.get('/api/strategies')).headers.get('x-cache')).toBe('HIT')

      // Past the TTL, the refresh still running: every reader, on either instance, gets the old answer.
      await until(cachedAt, SHORT_TTL_MS + 200)
      const answers = await Promise.all([
        readers(3, '/api/strategies', onA),
        readers(3, '/api/strategies', onB),
      ])
      for (const res of answers.flat()) {
        expect([res.status, res.data]).toEqual([200, [{ id: 1, version: 1 }]])
        expect(res.headers.get('x-cache')).toBe('STALE')
        expect(res.headers.get('cache-status')).toMatch(
          /^trading-api; hit; ttl=-\d+; detail=stale-while-revalidate$/,
        )
      }
      expect([upstream.calls, upstream.mostAtOnce]).toEqual([1, 1])

      upstream.release()
      await eventuallyPasses(async () =>
        expect((await onB.get('/api/strategies')).headers.get('x-cache')).toBe('HIT'),
      )
      expect((await onA.get('/api/strategies')).data).toEqual([{ id: 1, version: 2 }])
      expect(fake.callsTo('GET', '/strategies')).toHaveLength(2)
    })
  })

  it('past its TTL: the first reader on one instance loads it; readers on both get the old answer meanwhile', async () => {
    await withTwoInstances(redisUrl ?? '', env(), async (a, b) => {
      const [onA, onB] = await onBoth(a, b)
      fake.on('GET', '/strategies', { body: { data: [{ id: 1, version: 1 }] } })
      await onA.get('/api/strategies')
      const cachedAt = Date.now()
      const upstream = heldAnswer({ body: { data: [{ id: 1, version: 2 }] } })
      fake.on('GET', '/strategies', upstream.answer)

      await until(cachedAt, SHORT_TTL_MS + 200)
      const first = onB.get('/api/strategies')
      await eventuallyPasses(() => expect(upstream.calls).toBe(1))
      const answers = await Promise.all([
        readers(3, '/api/strategies', onA),
        readers(3, '/api/strategies', onB),
      ])
      for (const res of answers.flat()) {
        expect([res.status, res.data, res.headers.get('x-cache')]).toEqual([
          200,
          [{ id: 1, version: 1 }],
          'STALE',
        ])
      }
      expect([upstream.calls, upstream.mostAtOnce]).toEqual([1, 1])

      upstream.release()
      const answered = await first
      expect([answered.data, answered.headers.get('cache-status')]).toEqual([
        [{ id: 1, version: 2 }],
        'trading-api; fwd=stale',
      ])
      expect((await onA.get('/api/strategies')).headers.get('x-cache')).toBe('HIT')
      expect(fake.callsTo('GET', '/strategies')).toHaveLength(2)
    })
  })
})
