import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { createServer } from 'node:net'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { buildTestApp } from '../../../test/helpers/build-test-app.ts'
import { type ClientResponse, TestClient } from '../../../test/helpers/client.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import type { FakeUpstream } from '../../../test/helpers/fake-upstream.ts'
import { UPSTREAM_TOKEN, upstreamEnv } from '../../../test/helpers/proxy.ts'
import { withTwoInstances } from '../../../test/helpers/two-instances.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../../test/helpers/under-test.ts'

/**
 * The proxy mechanism over real HTTP: the app in front of a recording fake upstream. Shared reads
 * are cached across tests, so each test reads its own `market_id` (or symbol) to start cold.
 */

const TOKEN = UPSTREAM_TOKEN
const TIMEOUT_MS = 500

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({ env: upstreamEnv(fake.url) }))
let client: TestClient
let userId: number
beforeAll(async () => {
  const signedIn = await signedInClient(t, { verified: true })
  client = signedIn.client
  userId = signedIn.user.id
})
beforeEach(() => fake.reset())

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`

/** Fails when the token shows anywhere in an answer: status line aside, every header and the body. */
function expectNoToken(res: ClientResponse) {
  for (const [name, value] of res.headers) {
    expect(`${name}: ${value}`).not.toContain(TOKEN)
  }
  expect(res.text).not.toContain(TOKEN)
}

describe('calls to the upstream', () => {
  it('carry the bearer token, X-User-Id, X-Request-Id and Accept, and pass the query through', async () => {
    const market = unique('US')
    fake.on('GET', '/markets', { body: { data: { id: market } } })
    const res = await client.get(`/api/markets?market_id=${market}`, {
      headers: { 'x-request-id': 'req-42' },
    })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ id: market })
    const [call] = fake.callsTo('GET', '/markets')
    expect(fake.calls).toHaveLength(1)
    expect(call?.url).toBe(`/markets?market_id=${market}`)
    expect(call?.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(call?.headers['x-user-id']).toBe(String(userId))
    expect(call?.headers['x-request-id']).toBe('req-42')
    expect(call?.headers.accept).toBe('application/json')
    expect(call?.headers['content-type']).toBeUndefined()
  })

  it('send writes as JSON with the content type, per user', async () => {
    fake.on('POST', '/strategies', { status: 201, body: { data: { id: 7 } } })
    const res = await client.post('/api/strategies', { name: 'Breakout' })
    expect(res.status).toBe(201)
    const [call] = fake.callsTo('POST', '/strategies')
    expect(call?.headers['content-type']).toBe('application/json')
    expect(call?.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(call?.headers['x-user-id']).toBe(String(userId))
    expect(call?.body).toEqual({ name: 'Breakout' })
  })

  it.each([
    ['../x', '..%2Fx'],
    ['a/b', 'a%2Fb'],
    ['a b?c#d', 'a%20b%3Fc%23d'],
  ])('send the symbol %j as the one encoded segment %s', async (symbol, segment) => {
    fake.on('GET', /^\/(tickers|strategies\/search)\//, { body: { data: { symbol } } })
    const res = await client.get(`/api/tickers/${encodeURIComponent(symbol)}`)
    expect(res.data).toEqual({ symbol })
    const search = await client.get(`/api/strategies/search/${encodeURIComponent(symbol)}`)
    expect(search.status).toBe(200)
    expect(fake.calls.map((c) => c.path)).toEqual([`/tickers/${segment}`, `/strategies/search/${segment}`])
  })

  // fetch() resolves dot segments (`%2e%2e` included) before sending, so these go out raw.
  it.each([
    ['%2e%2e', '%2E%2E'],
    ['.', '%2E'],
    ['..%2F..%2Fadmin', '..%2F..%2Fadmin'],
  ])(
    'send the segment %s typed by hand as the one encoded segment %s, not a step up',
    async (raw, segment) => {
      fake.on('GET', /^\/(tickers|strategies\/search)\//, { body: { data: 'ok' } })
      expect((await rawGet(`/api/tickers/${raw}`)).status).toBe(200)
      expect((await rawGet(`/api/strategies/search/${raw}`)).status).toBe(200)
      expect(fake.calls.map((c) => c.path)).toEqual([`/tickers/${segment}`, `/strategies/search/${segment}`])
    },
  )

  it('send a bare `..` segment as `%2E%2E`, not a step up', async () => {
    fake.on('GET', /^\/(markets|news)\//, { body: { data: 'dots' } })
    expect((await rawGet('/api/markets/..')).body).toBe('"dots"')
    expect((await rawGet('/api/news/..')).body).toBe('"dots"')
    expect(fake.calls.map((c) => c.path)).toEqual(['/markets/%2E%2E', '/news/%2E%2E'])
  })
})

/** A GET sent byte for byte as written (no URL normalising), with the signed-in client's cookies. */
function rawGet(path: string): Promise<{ status: number; body: string }> {
  const cookie = client.cookieHeader
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(t.baseUrl)
    // Given as `path`, not a URL, so Node sends it as written.
    const options = { hostname, port, path, headers: { cookie, accept: 'application/json' } }
    const req = request(options, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        body += chunk
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('the cache', () => {
  it('answers a shared read from the cache within the TTL and asks the upstream again after it', async () => {
    const market = unique('EU')
    fake.on('GET', '/markets', { body: { data: [{ id: market, open: true }] } })
    const first = await client.get(`/api/markets?market_id=${market}`)
    expect(first.headers.get('x-cache')).toBe('MISS')
    expect(first.headers.get('cache-status')).toBe('trading-api; fwd=uri-miss')
    // Half the TTL: fresh, and not yet due for its background refresh (proxy.outage.test.ts).
    const ttlMs = t.config.cache.ttlSeconds * 1000
    t.clock.advance(ttlMs / 2)
    const second = await client.get(`/api/markets?market_id=${market}`)
    expect(second.headers.get('x-cache')).toBe('HIT')
    expect(second.headers.get('cache-status')).toBe('trading-api; hit')
    expect(second.data).toEqual(first.data)
    expect(second.headers.get('content-type')).toMatch(/^application\/json/)
    expect(fake.calls).toHaveLength(1)

    t.clock.advance(ttlMs / 2 + 1000)
    const third = await client.get(`/api/markets?market_id=${market}`)
    expect(third.headers.get('x-cache')).toBe('MISS')
    expect(third.headers.get('cache-status')).toBe('trading-api; fwd=stale')
    expect(fake.calls).toHaveLength(2)
  })

  it('shares market data between users, keyed by path and sorted query', async () => {
    const { client: other } = await signedInClient(t)
    fake.on('GET', '/news', { body: { data: [{ id: 1 }], links: { next: null }, meta: { total: 1 } } })
    const page = 3
    const a = await client.get(`/api/news?per_page=5&page=${page}`)
    const b = await other.get(`/api/news?page=${page}&per_page=5`)
    expect([a.headers.get('x-cache'), b.headers.get('x-cache')]).toEqual(['MISS', 'HIT'])
    expect(b.data).toEqual({ data: [{ id: 1 }], links: { next: null }, meta: { total: 1 } })
    expect(fake.calls.map((c) => c.url)).toEqual([`/news?page=${page}&per_page=5`])
  })

  it('makes ONE upstream call for 50 concurrent cold requests, and answers all 50', async () => {
    const market = unique('ASIA')
    fake.on('GET', '/markets', { body: { data: { id: market } }, delayMs: 100 })
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => client.get(`/api/markets?market_id=${market}`)),
    )
    expect(answers.map((res) => res.status)).toEqual(Array(50).fill(200))
    expect(answers.every((res) => res.data.id === market)).toBe(true)
    expect(fake.callsTo('GET', '/markets')).toHaveLength(1)
  })

  it('keeps per-user reads apart: one user is never answered from another user’s entry', async () => {
    const { client: other, user: otherUser } = await signedInClient(t)
    fake.on('GET', '/accounts', (call) => ({ body: { data: [{ owner: call.headers['x-user-id'] }] } }))
    const mine = await client.get('/api/accounts')
    const theirs = await other.get('/api/accounts')
    expect(mine.data).toEqual([{ owner: String(userId) }])
    expect(theirs.data).toEqual([{ owner: String(otherUser.id) }])
    expect(theirs.headers.get('x-cache')).toBe('MISS')
    expect((await other.get('/api/accounts')).headers.get('x-cache')).toBe('HIT')
    expect(fake.calls).toHaveLength(2)
  })
})

describe('upstream failures', () => {
  const failures: [string, Parameters<FakeUpstream['on']>[2], string][] = [
    ['a 503', { status: 503, body: { message: 'down' } }, 'Upstream request failed with status 503'],
    [
      'a 404',
      { status: 404, body: { message: 'no such market' } },
      'Upstream request failed with status 404',
    ],
    ['a time-out (no answer at all)', { hang: true }, `Upstream request timed out after ${TIMEOUT_MS} ms`],
    [
      'a time-out after the headers',
      { hangAfterHeaders: true },
      `Upstream request timed out after ${TIMEOUT_MS} ms`,
    ],
    ['a reset mid-body', { resetMidBody: true }, 'Upstream connection failed before the answer was complete'],
    ['a body that is not JSON', { raw: '<html>Bad gateway</html>' }, 'Upstream answered with invalid JSON'],
    ['JSON without data', { body: { items: [1, 2] } }, 'Upstream answer has no data'],
    ['JSON that is not an object', { body: [1, 2] }, 'Upstream answer has no data'],
  ]

  it.each(failures)(
    'answer %s with 500 {"error"}, cache nothing and leak no token',
    async (_name, answer, message) => {
      const market = unique('FAIL')
      fake.on('GET', '/markets', answer)
      const res = await client.get(`/api/markets?market_id=${market}`)
      expect(res.status).toBe(500)
      expect(res.data).toEqual({ error: message })
      expectNoToken(res)
      // Not cached: the next read asks the upstream again, and a good answer now comes through.
      fake.on('GET', '/markets', { body: { data: { id: market } } })
      const again = await client.get(`/api/markets?market_id=${market}`)
      expect(again.status).toBe(200)
      expect(again.headers.get('x-cache')).toBe('MISS')
      expect(fake.callsTo('GET', '/markets')).toHaveLength(2)
    },
  )

  it('cuts a hung upstream at the time-out', async () => {
    fake.on('GET', '/market-calendar', { hang: true })
    const started = performance.now()
    const res = await client.get('/api/market-calendar')
    const elapsed = performance.now() - started
    expect(res.status).toBe(500)
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 20)
    expect(elapsed).toBeLessThan(TIMEOUT_MS + 1500)
  })

  it('answers a failed write with 500 {"error"} too', async () => {
    fake.on('PUT', '/conditions/:id', { status: 422, body: { message: 'bad condition', token: TOKEN } })
    const res = await client.put('/api/conditions/9', { rule: 'x' })
    expect(res.status).toBe(500)
    expect(res.data).toEqual({ error: 'Upstream request failed with status 422' })
    expectNoToken(res)
  })

  it('answers a refused connection with 500 {"error"}, and never leaks the token', async () => {
    const port = await closedPort()
    const down = await buildTestApp({ env: upstreamEnv(`http://127.0.0.1:${port}`) })
    try {
      const { client: caller } = await signedInClient(down)
      const res = await caller.get('/api/markets')
      expect(res.status).toBe(500)
      expect(res.data).toEqual({ error: 'Upstream service is unreachable' })
      expectNoToken(res)
      const write = await caller.post('/api/strategy/1/deploy', {})
      expect(write.status).toBe(500)
      expectNoToken(write)
    } finally {
      await down.close()
    }
  })
})

describe('the token', () => {
  it('appears in no answer: success, hit, created, deleted, 401, 404, 419, 422 and 500', async () => {
    fake.on('*', /.*/, (call) => ({
      status: call.method === 'POST' ? 201 : 200,
      body: { data: { ok: true } },
    }))
    const guest = new TestClient(t.baseUrl)
    const answers = [
      await client.get('/api/market-calendar'),
      await client.get('/api/market-calendar'),
      await client.get('/api/strategies'),
      await client.post('/api/strategies', { name: 'x' }),
      await client.put('/api/strategies/1', { name: 'y' }),
      await client.post('/api/strategy/1/deploy', {}),
      await client.delete('/api/strategies/1'),
      await client.post('/api/market-balance', { filters: {} }),
      await client.get('/api/no-such-route'),
      await guest.get('/api/markets'),
      await guest.post('/api/strategies', {}, { withoutCsrf: true }),
    ]
    // An upstream error that quotes the token: its text never reaches the caller.
    fake.on('GET', '/legacy_analysis', { status: 500, body: { message: `bad token ${TOKEN}` } })
    answers.push(await client.get('/api/legacy_analysis'))
    expect(answers.map((res) => res.status)).toEqual([
      200, 200, 200, 201, 200, 200, 204, 422, 404, 401, 419, 500,
    ])
    for (const res of answers) expectNoToken(res)
  })
})

/** A loopback port nothing listens on: bound, then closed again. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const redisUrl = process.env.TEST_REDIS_URL
// Joins the run when it has a Redis (CI's PostgreSQL+Redis run), as the rate-limit tests do.
describe.each(redisUrl ? ['redis'] : [])('with %s, two instances', () => {
  it('share one cache: a write through instance A clears the read cached by instance B', async () => {
    await withTwoInstances(redisUrl ?? '', upstreamEnv(fake.url), async (a, b) => {
      const { user, password } = await signedInClient(a)
      const onA = new TestClient(a.baseUrl)
      const onB = new TestClient(b.baseUrl)
      for (const c of [onA, onB])
        expect((await c.post('/api/login', { email: user.email, password })).status).toBe(200)
      fake.on('GET', '/strategies', { body: { data: [{ id: 1 }] } })

      expect((await onB.get('/api/strategies')).headers.get('x-cache')).toBe('MISS')
      expect((await onA.get('/api/strategies')).headers.get('x-cache')).toBe('HIT')
      expect((await onB.get('/api/strategies')).headers.get('x-cache')).toBe('HIT')
      expect(fake.callsTo('GET', '/strategies')).toHaveLength(1)

      expect((await onA.post('/api/strategy/1/status/off', {})).status).toBe(200)
      const afterWrite = await onB.get('/api/strategies')
      expect(afterWrite.headers.get('x-cache')).toBe('MISS')
      expect(fake.callsTo('GET', '/strategies')).toHaveLength(2)
    })
  })
})
