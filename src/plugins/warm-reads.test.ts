import { request } from 'node:http'
import { beforeEach, describe, expect, it } from 'vitest'
import { buildTestApp, SPA_ORIGIN, type TestApp } from '../../test/helpers/build-test-app.ts'
import { minutes } from '../../test/helpers/clock.ts'
import { signedInAdmin, signedInClient } from '../../test/helpers/factories.ts'
import { memoryLog } from '../../test/helpers/memory-log.ts'
import { parseSamples, sampleValue } from '../../test/helpers/prometheus.ts'
import { upstreamEnv } from '../../test/helpers/proxy.ts'
import { withTwoInstances } from '../../test/helpers/two-instances.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../test/helpers/under-test.ts'

/**
 * The warm-read lane against Fastify's own lifecycle, over real HTTP: the same request, once as the
 * lane takes it (`/api/markets`) and once as it does not (`/api/markets?`: the same route, query and
 * cache entry, through Fastify), must get the same answer, log line and metrics; and every request
 * the lane cannot answer from memory must reach Fastify with nothing counted twice.
 */

const READS_PER_MINUTE = 8
const METRICS_TOKEN = 'warm-reads-metrics-token-1234'
// A route of this test's own, whose lane entry throws.
const FAILING_PATH = '/test/lane-failure'

const log = memoryLog()

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({
  env: {
    ...upstreamEnv(fake.url),
    PROXY_READS_PER_MINUTE: String(READS_PER_MINUTE),
    CACHE_TTL_SECONDS: '600',
    METRICS_TOKEN,
    TRUSTED_PROXIES: '127.0.0.1',
  },
  loggerInstance: log.logger,
  extend: (app) => {
    app.get(FAILING_PATH, { config: { auth: 'session' } }, async () => 'from Fastify')
  },
}))
beforeEach(() => {
  fake.reset()
  // A fresh throttle window for each test, and each session's touch done by its first request.
  t.clock.advance(minutes(2))
})

/** A signed-in user's Cookie header, sessions touched and the markets entry warm. */
async function signedIn() {
  const { client, user } = await signedInClient(t)
  const cookie = client.cookieHeader
  await get('/api/markets', { cookie })
  return { cookie, user }
}

async function get(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(`${t.baseUrl}${path}`, { method, headers })
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/** A request, and whether the lane answered it. */
async function viaLane(path: string, headers: Record<string, string> = {}, method = 'GET') {
  const before = t.app.warmReads.served
  const res = await get(path, headers, method)
  return { ...res, laned: t.app.warmReads.served - before === 1 }
}

/** Every header but the ones that differ between two answers by nature, as a comparable list. */
const comparable = (headers: Headers) =>
  [...headers].filter(([name]) => !['date', 'x-ratelimit-remaining'].includes(name))

const accessLines = () => log.lines().filter((line) => line.msg === 'request completed')

describe('a warm read, answered by the lane', () => {
  const cases: [string, Record<string, string>][] = [
    ['with no Origin', {}],
    ["from the app's origin", { origin: SPA_ORIGIN }],
    ['from another origin', { origin: 'https://elsewhere.example' }],
    [
      'with a request id and a forwarded client',
      { 'x-request-id': 'req-77', 'x-forwarded-for': '203.0.113.9' },
    ],
  ]
  it.each(cases)('%s, gets what the full lifecycle answers', async (_name, extra) => {
    const { cookie, user } = await signedIn()
    const headers = { cookie, accept: 'application/json', ...extra }
    const viaFastify = await viaLane('/api/markets?', headers)
    const laned = await viaLane('/api/markets', headers)

    expect(viaFastify.laned).toBe(false)
    expect(laned.laned).toBe(true)
    expect(laned.status).toBe(200)
    expect(laned.text).toBe(viaFastify.text)
    expect(JSON.parse(laned.text)).toEqual(expect.any(Array))
    expect(laned.headers.get('x-cache')).toBe('HIT')
    expect(laned.headers.get('x-content-type-options')).toBe('nosniff')
    expect(laned.headers.getSetCookie()).toHaveLength(2)
    const requestId = (res: typeof laned) => res.headers.get('x-request-id')
    if (extra['x-request-id']) {
      expect(comparable(laned.headers)).toEqual(comparable(viaFastify.headers))
    } else {
      // A new id each: the rest the same.
      expect(requestId(laned)).toMatch(/^[0-9a-f-]{36}$/)
      expect(requestId(laned)).not.toBe(requestId(viaFastify))
      const withoutId = (headers: Headers) => comparable(headers).filter(([name]) => name !== 'x-request-id')
      expect(withoutId(laned.headers)).toEqual(withoutId(viaFastify.headers))
    }
    // One more read counted: the same throttle window.
    expect(Number(laned.headers.get('x-ratelimit-remaining'))).toBe(
      Number(viaFastify.headers.get('x-ratelimit-remaining')) - 1,
    )

    const [fastifyLine, laneLine] = accessLines().slice(-2)
    const { ms: _a, url: fastifyUrl, time: _b, ...fastifyRest } = fastifyLine ?? {}
    const { ms, url, time: _c, ...laneRest } = laneLine ?? {}
    expect(fastifyUrl).toBe('/api/markets?')
    expect(url).toBe('/api/markets')
    expect(ms).toEqual(expect.any(Number))
    expect({ ...laneRest, request_id: 'x' }).toEqual({ ...fastifyRest, request_id: 'x' })
    expect(laneRest).toMatchObject({
      request_id: requestId(laned),
      user_id: user.id,
      // Behind the trusted proxy (127.0.0.1), the client it names; else the peer.
      ip: extra['x-forwarded-for'] ?? '127.0.0.1',
      status: 200,
    })
  })

  it('is counted in the request metrics as the route', async () => {
    const { cookie } = await signedIn()
    const count = async () => {
      const res = await get('/metrics', { authorization: `Bearer ${METRICS_TOKEN}` })
      const labels = { method: 'GET', route: '/api/markets', status_code: '200' }
      return sampleValue(parseSamples(res.text), 'trading_api_http_requests_total', labels)
    }
    const before = await count()
    for (let i = 0; i < 3; i++) expect((await viaLane('/api/markets', { cookie })).laned).toBe(true)
    expect(await count()).toBe(before + 3)
  })
})

describe("a user's own cached read", () => {
  it("is laned for that user only: another user's first read is their own, from the upstream", async () => {
    const first = await signedIn()
    const second = await signedIn()
    const own = await get('/api/strategies', { cookie: first.cookie })
    expect(own.status).toBe(200)
    const again = await viaLane('/api/strategies', { cookie: first.cookie })
    expect(again).toMatchObject({ status: 200, laned: true, text: own.text })

    const others = await viaLane('/api/strategies', { cookie: second.cookie })
    expect(others).toMatchObject({ status: 200, laned: false })
    expect(others.headers.get('x-cache')).toBe('MISS')
    const calls = fake.callsTo('GET', '/strategies').map((call) => call.headers['x-user-id'])
    expect(calls).toEqual([String(first.user.id), String(second.user.id)])
    expect((await viaLane('/api/strategies', { cookie: second.cookie })).laned).toBe(true)
  })
})

describe('a request the lane leaves to Fastify', () => {
  it('past the read limit: the 429, with no read counted twice', async () => {
    const { cookie, user } = await signedIn()
    // signedIn() made one read in this window.
    for (let read = 2; read <= READS_PER_MINUTE; read++) {
      const res = await viaLane('/api/markets', { cookie })
      expect(res).toMatchObject({ status: 200, laned: true })
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(READS_PER_MINUTE - read))
    }
    for (let i = 0; i < 2; i++) {
      const refused = await viaLane('/api/markets', { cookie })
      expect(refused).toMatchObject({ status: 429, laned: false })
      expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    }
    // Each request counted once, the refused ones too (as Laravel counts them).
    const window = await t.app.rateLimiter.counters.peek('upstream-reads', String(user.id))
    expect(window?.attempts).toBe(READS_PER_MINUTE + 2)
    t.clock.advance(minutes(1))
    const next = await viaLane('/api/markets', { cookie })
    expect(next.status).toBe(200)
    expect(next.headers.get('x-ratelimit-remaining')).toBe(String(READS_PER_MINUTE - 1))
  })

  it('a session due for its touch: touched through Fastify, then laned again', async () => {
    const { cookie } = await signedIn()
    t.clock.advance(minutes(2))
    const touched = await viaLane('/api/markets', { cookie })
    expect(touched).toMatchObject({ status: 200, laned: false })
    expect(touched.headers.get('x-cache')).toBe('HIT')
    expect((await viaLane('/api/markets', { cookie })).laned).toBe(true)
  })

  it('a guest, an unknown session and a blocked user: refused as always', async () => {
    expect(await viaLane('/api/markets')).toMatchObject({ status: 401, laned: false })
    const unknown = await viaLane('/api/markets', { cookie: 'app_session=nobody' })
    expect(unknown).toMatchObject({ status: 401, laned: false })
    expect(unknown.headers.getSetCookie().join()).toContain('app_session=;')

    const { cookie, user } = await signedIn()
    const admin = await signedInAdmin(t)
    const blocked = await admin.client.post(`/api/user/block-unblock/${user.id}`, {})
    expect(blocked.status).toBe(200)
    expect(await viaLane('/api/markets', { cookie })).toMatchObject({ status: 401, laned: false })
  })

  it('a cold or expired entry: loaded from the upstream, then laned', async () => {
    const { cookie } = await signedIn()
    t.clock.advance(minutes(11))
    const before = fake.callsTo('GET', '/markets').length
    const reloaded = await viaLane('/api/markets', { cookie })
    expect(reloaded).toMatchObject({ status: 200, laned: false })
    expect(reloaded.headers.get('x-cache')).toBe('MISS')
    expect(fake.callsTo('GET', '/markets')).toHaveLength(before + 1)
    expect((await viaLane('/api/markets', { cookie })).laned).toBe(true)
  })

  it('HEAD, a trailing slash and a GET with a body', async () => {
    const { cookie } = await signedIn()
    expect(await viaLane('/api/markets', { cookie }, 'HEAD')).toMatchObject({ status: 200, laned: false })
    expect(await viaLane('/api/markets/', { cookie })).toMatchObject({ status: 200, laned: false })
    const before = t.app.warmReads.served
    const withBody = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(`${t.baseUrl}/api/markets`, {
        method: 'GET',
        headers: { cookie, 'content-type': 'application/json', 'content-length': '2' },
      })
      req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode)))
      req.on('error', reject)
      req.end('{}')
    })
    expect(withBody).toBe(200)
    expect(t.app.warmReads.served).toBe(before)
  })

  it('a read of a path with parameters', async () => {
    const { cookie } = await signedIn()
    fake.on('GET', '/tickers/AAPL', { body: { data: { symbol: 'AAPL' } } })
    expect((await viaLane('/api/tickers/AAPL', { cookie })).headers.get('x-cache')).toBe('MISS')
    const ticker = await viaLane('/api/tickers/AAPL', { cookie })
    expect(ticker).toMatchObject({ status: 200, laned: false })
    expect(ticker.headers.get('x-cache')).toBe('HIT')
  })
})

describe('a failure in the lane', () => {
  it('is logged, and the request goes to Fastify', async () => {
    const { cookie } = await signedIn()
    t.app.warmReads.add({
      url: FAILING_PATH,
      auth: 'session',
      headers: [],
      inMemory: () => {
        throw new Error('inMemory() broke')
      },
    })
    const res = await viaLane(FAILING_PATH, { cookie })
    expect(res).toMatchObject({ status: 200, laned: false, text: 'from Fastify' })
    const failure = log.lines().find((line) => line.msg === 'warm-read lane failed')
    expect(failure).toMatchObject({ level: 50, url: FAILING_PATH, err: { message: 'inMemory() broke' } })
  })
})

describe('while the instance drains', () => {
  it('a warm read goes through Fastify, its answer closing the connection', async () => {
    const draining = await buildTestApp({
      env: { ...upstreamEnv(fake.url), SHUTDOWN_GRACE_MS: '2000' },
    })
    try {
      const { client } = await signedInClient(draining)
      const cookie = client.cookieHeader
      const read = () => fetch(`${draining.baseUrl}/api/markets`, { headers: { cookie } })
      await (await read()).text()
      const before = draining.app.warmReads.served
      await (await read()).text()
      expect(draining.app.warmReads.served).toBe(before + 1)

      const stopped = draining.app.shutdown.stop()
      const res = await read()
      await res.text()
      expect(res.status).toBe(200)
      expect(res.headers.get('connection')).toBe('close')
      expect(draining.app.warmReads.served).toBe(before + 1)
      await stopped
    } finally {
      await draining.close()
    }
  })
})

const redisUrl = process.env.TEST_REDIS_URL
// Joins the run when it has a Redis (CI's PostgreSQL + Redis run): the lane as a multi-instance deployment has it.
describe.each(redisUrl ? ['redis'] : [])('with %s, two instances', () => {
  const twoInstances = (use: (a: TestApp, b: TestApp) => Promise<void>) =>
    withTwoInstances(
      redisUrl ?? '',
      { ...upstreamEnv(fake.url), PROXY_READS_PER_MINUTE: String(READS_PER_MINUTE) },
      use,
    )
  const readOn = async (instance: TestApp, path: string, cookie: string) => {
    const before = instance.app.warmReads.served
    const res = await fetch(`${instance.baseUrl}${path}`, { headers: { cookie } })
    return {
      status: res.status,
      headers: res.headers,
      text: await res.text(),
      laned: instance.app.warmReads.served > before,
    }
  }

  it('a shared read is laned by each instance once it holds it; the read limit is one count across both', async () => {
    await twoInstances(async (a, b) => {
      const { client, user } = await signedInClient(a)
      const cookie = client.cookieHeader
      // Loaded through a; b's first read finds it in Redis, and b holds it from then on.
      expect(await readOn(a, '/api/markets', cookie)).toMatchObject({ status: 200, laned: false })
      const fromRedis = await readOn(b, '/api/markets', cookie)
      expect(fromRedis).toMatchObject({ status: 200, laned: false })
      expect(fromRedis.headers.get('x-cache')).toBe('HIT')
      for (let read = 3; read <= READS_PER_MINUTE; read++) {
        const res = await readOn(read % 2 ? a : b, '/api/markets', cookie)
        expect(res).toMatchObject({ status: 200, laned: true, text: fromRedis.text })
        expect(res.headers.get('x-cache')).toBe('HIT')
        expect(res.headers.get('x-ratelimit-remaining')).toBe(String(READS_PER_MINUTE - read))
      }
      for (const instance of [a, b]) {
        const refused = await readOn(instance, '/api/markets', cookie)
        expect(refused).toMatchObject({ status: 429, laned: false })
        expect(refused.headers.get('x-ratelimit-remaining')).toBe('0')
      }
      // Each request counted once in the shared window, the refused ones too.
      const window = await b.app.rateLimiter.counters.peek('upstream-reads', String(user.id))
      expect(window?.attempts).toBe(READS_PER_MINUTE + 2)
      expect(fake.callsTo('GET', '/markets')).toHaveLength(1)
    })
  })

  it("a user's own read is never laned: a write through one instance is seen by the next read on the other", async () => {
    await twoInstances(async (a, b) => {
      const { client } = await signedInClient(a)
      const cookie = client.cookieHeader
      fake.on('GET', '/strategies', { body: { data: [{ id: 1 }] } })
      expect((await readOn(b, '/api/strategies', cookie)).headers.get('x-cache')).toBe('MISS')
      const hit = await readOn(b, '/api/strategies', cookie)
      expect(hit).toMatchObject({ status: 200, laned: false })
      expect(hit.headers.get('x-cache')).toBe('HIT')
      expect((await client.post('/api/strategy/1/status/off', {})).status).toBe(200)
      const afterWrite = await readOn(b, '/api/strategies', cookie)
      expect(afterWrite).toMatchObject({ status: 200, laned: false })
      expect(afterWrite.headers.get('x-cache')).toBe('MISS')
      expect(fake.callsTo('GET', '/strategies')).toHaveLength(2)
    })
  })
})
