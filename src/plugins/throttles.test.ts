import { beforeAll, describe, expect, it } from 'vitest'
import { type ClientResponse, TestClient } from '../../test/helpers/client.ts'
import { createUser, signedInClient, uniqueEmail } from '../../test/helpers/factories.ts'
import { upstreamEnv } from '../../test/helpers/proxy.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../test/helpers/under-test.ts'

/**
 * The throttles of routes that had none. The app trusts 127.0.0.1 as its load balancer here, so each
 * test plays a client at an address of its own (X-Forwarded-For) and the per-address counts stay apart.
 */

const upstream = fakeUpstreamUnderTest()
beforeAll(() => {
  upstream.on('GET', /.*/, { body: { data: { ok: true } } })
})
const t = appUnderTest(() => ({
  env: {
    ...upstreamEnv(upstream.url),
    TRUSTED_PROXIES: '127.0.0.1',
    PROXY_READS_PER_MINUTE: '30',
    PROXY_WRITES_PER_MINUTE: '5',
  },
}))

let lastAddress = 0
/** A client address no other test uses. */
const newAddress = () => `203.0.113.${++lastAddress}`
const from = (address: string) => ({ headers: { 'x-forwarded-for': address } })

/** Laravel's 429: `{message}`, Retry-After within the window, the limit it hit. */
function expectThrottled(res: ClientResponse, limit: number, windowSeconds: number) {
  expect(res.status).toBe(429)
  expect(res.data).toEqual({ message: 'Too Many Attempts.' })
  const retryAfter = Number(res.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThan(0)
  expect(retryAfter).toBeLessThanOrEqual(windowSeconds)
  expect(res.headers.get('x-ratelimit-limit')).toBe(String(limit))
}

describe('POST /api/register', () => {
  it('takes 30 attempts in 10 minutes from one address, valid or not; the 31st is 429', async () => {
    const address = newAddress()
    const client = new TestClient(t.baseUrl)
    for (let i = 0; i < 30; i++) {
      const res = await client.post('/api/register', { name: 'Bot', email: 'not-an-email' }, from(address))
      expect(res.status).toBe(422)
    }
    const body = {
      name: 'Late',
      email: uniqueEmail('late'),
      password: 'correct horse battery',
      password_confirmation: 'correct horse battery',
    }
    expectThrottled(await client.post('/api/register', body, from(address)), 30, 600)
    // Another address signs up as usual.
    expect((await new TestClient(t.baseUrl).post('/api/register', body, from(newAddress()))).status).toBe(201)
  })
})

describe('GET /guard/csrf-cookie', () => {
  it('opens 1500 sessions in 10 minutes for callers without one at an address, then 429', async () => {
    const address = newAddress()
    const open = () =>
      fetch(`${t.baseUrl}/guard/csrf-cookie`, from(address)).then(async (res) => {
        await res.arrayBuffer()
        return res.status
      })
    const statuses: number[] = []
    for (let batch = 0; batch < 75; batch++)
      statuses.push(...(await Promise.all(Array.from({ length: 20 }, open))))
    expect(statuses.filter((status) => status !== 204)).toEqual([])

    const refused = new TestClient(t.baseUrl)
    expectThrottled(await refused.get('/guard/csrf-cookie', from(address)), 1500, 600)
    expect(refused.cookies.size).toBe(0)
    // A caller that has a session only has its cookies sent again: nothing is stored, nothing counted.
    const { client } = await signedInClient(t)
    expect((await client.get('/guard/csrf-cookie', from(address))).status).toBe(204)
    expect((await client.get('/api/user', from(address))).status).toBe(200)
    // Another address is not held up.
    expect((await new TestClient(t.baseUrl).get('/guard/csrf-cookie', from(newAddress()))).status).toBe(204)
  })
})

describe('POST /api/login across emails (password spraying)', () => {
  it('allows 50 failed logins in 10 minutes from one address, whatever the emails; then 429 even to a right password', async () => {
    const address = newAddress()
    const { user, password } = await createUser(t.database.db)
    const client = new TestClient(t.baseUrl)
    const fail = () =>
      client.post('/api/login', { email: uniqueEmail('spray'), password: 'Summer2024!' }, from(address))
    for (let i = 0; i < 49; i++) expect((await fail()).status).toBe(422)
    // A login that succeeds gives its attempt back: an office behind one address keeps signing in.
    for (let i = 0; i < 3; i++) {
      const ok = await new TestClient(t.baseUrl).post(
        '/api/login',
        { email: user.email, password },
        from(address),
      )
      expect(ok.status).toBe(200)
    }
    expect((await fail()).status).toBe(422)
    const refused = await new TestClient(t.baseUrl).post(
      '/api/login',
      { email: user.email, password },
      from(address),
    )
    expectThrottled(refused, 50, 600)
    const elsewhere = new TestClient(t.baseUrl)
    expect(
      (await elsewhere.post('/api/login', { email: user.email, password }, from(newAddress()))).status,
    ).toBe(200)
    // A 422 on the body is no password tried: it is not counted.
    const address2 = newAddress()
    for (let i = 0; i < 60; i++) {
      const res = await client.post('/api/login', { email: uniqueEmail('no-password') }, from(address2))
      expect(res.status).toBe(422)
    }
    expect((await client.post('/api/login', { email: user.email, password }, from(address2))).status).toBe(
      200,
    )
  })
})

describe('routes that check the current password', () => {
  it('share 10 checks in 10 minutes per user, right or wrong; the 11th is 429 and changes nothing', async () => {
    const { client, password } = await signedInClient(t, { verified: true })
    const wrong = { password: 'not my password' }
    const attempts = [
      () => client.put('/api/user-profile/password', { ...wrong, current_password: 'nope' }),
      () => client.delete('/api/user-profile', wrong),
      () => client.post('/api/user-profile/logout-other-sessions', wrong),
    ]
    for (let i = 0; i < 10; i++) {
      const res = await (attempts[i % attempts.length] as () => Promise<ClientResponse>)()
      expect(res.status, String(i)).toBe(422)
    }
    expectThrottled(await client.delete('/api/user-profile', { password }), 10, 600)
    expect((await client.get('/api/user')).status).toBe(200)
    // The 2FA routes that take the password count in the same place.
    expectThrottled(await client.delete('/api/user/two-factor-authentication', { password }), 10, 600)

    // Someone else's count is their own.
    const other = await signedInClient(t, { verified: true })
    const res = await other.client.post('/api/user-profile/logout-other-sessions', {
      password: other.password,
    })
    expect(res.status).toBe(200)
  })
})

describe('proxied reads', () => {
  it('take PROXY_READS_PER_MINUTE reads a minute per user, whatever the market or page; then 429 without an upstream call', async () => {
    const { client } = await signedInClient(t, { verified: true })
    upstream.reset()
    upstream.on('GET', /.*/, { body: { data: { ok: true } } })
    for (let i = 0; i < 30; i++) {
      const path = i % 2 === 0 ? `/api/markets?market_id=M${i}-${lastAddress}` : '/api/markets'
      expect((await client.get(path)).status, path).toBe(200)
    }
    const calls = upstream.calls.length
    expectThrottled(await client.get('/api/markets?market_id=one-more'), 30, 60)
    expect(upstream.calls.length).toBe(calls)

    // Another user's reads are theirs; a minute later this one reads again.
    const other = await signedInClient(t, { verified: true })
    expect((await other.client.get('/api/markets')).status).toBe(200)
    t.clock.advance(61_000)
    expect((await client.get('/api/markets')).status).toBe(200)
  })
})

describe('proxied calls other than GETs', () => {
  const answerEverything = () => {
    upstream.reset()
    for (const method of ['GET', 'POST', 'PUT', 'DELETE'])
      upstream.on(method, /.*/, { body: { data: { ok: true } } })
  }

  it('count POST /api/market-balance against the read limit, with the GETs', async () => {
    const { client } = await signedInClient(t, { verified: true })
    answerEverything()
    for (let i = 0; i < 20; i++) expect((await client.get(`/api/markets?market_id=B${i}`)).status).toBe(200)
    for (let i = 0; i < 10; i++) {
      const res = await client.post('/api/market-balance', { filters: { marketId: `M${i}` } })
      expect(res.status).toBe(200)
    }
    const calls = upstream.calls.length
    expectThrottled(await client.post('/api/market-balance', { filters: { marketId: 'one-more' } }), 30, 60)
    expectThrottled(await client.get('/api/markets?market_id=after'), 30, 60)
    expect(upstream.calls.length).toBe(calls)
  })

  it('take PROXY_WRITES_PER_MINUTE strategy and condition writes a minute per user, then 429 without an upstream call', async () => {
    const { client } = await signedInClient(t, { verified: true })
    answerEverything()
    const writes = [
      () => client.post('/api/strategies', { name: 'Breakout' }),
      () => client.put('/api/strategies/1', { name: 'Renamed' }),
      () => client.post('/api/strategy/1/status/on', {}),
      () => client.post('/api/conditions', { kind: 'price' }),
      () => client.delete('/api/conditions/1'),
    ]
    for (const write of writes) expect((await write()).status).toBeLessThan(300)
    const calls = upstream.calls.length
    expectThrottled(await client.delete('/api/strategies/1'), 5, 60)
    expectThrottled(await client.post('/api/strategy/1/clear-conditions-readings'), 5, 60)
    expect(upstream.calls.length).toBe(calls)
    // Reads have an allowance of their own.
    expect((await client.get('/api/strategies')).status).toBe(200)

    // Another user's writes are theirs; a minute later this one writes again.
    const other = await signedInClient(t, { verified: true })
    expect((await other.client.post('/api/conditions', { kind: 'price' })).status).toBe(201)
    t.clock.advance(61_000)
    expect((await client.delete('/api/strategies/1')).status).toBe(204)
  })
})
