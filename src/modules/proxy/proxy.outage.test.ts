import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { TestClient } from '../../../test/helpers/client.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import type { FakeAnswer } from '../../../test/helpers/fake-upstream.ts'
import { memoryLog } from '../../../test/helpers/memory-log.ts'
import { parseSamples, sampleValue } from '../../../test/helpers/prometheus.ts'
import { UPSTREAM_TOKEN, upstreamEnv } from '../../../test/helpers/proxy.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../../test/helpers/under-test.ts'

/**
 * What traders get while the upstream fails, over real HTTP against the fake upstream: reads of
 * entries past their TTL but within CACHE_STALE_SECONDS answer the old data (stale, said by
 * Cache-Status and counted), popular entries are refreshed before they expire, and the circuit
 * breaker makes reads fail or go stale at once instead of each waiting for the time-out.
 */

const TIMEOUT_MS = 1000
const TTL_SECONDS = 60
const STALE_SECONDS = 600
const BREAKER_FAILURES = 3
const COOL_DOWN_MS = 5_000
const METRICS_TOKEN = 'proxy-outage-metrics-token'
/** Well under any time-out: an answer that did not wait for the upstream. */
const AT_ONCE_MS = 250

const log = memoryLog()
const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({
  env: {
    ...upstreamEnv(fake.url, TIMEOUT_MS),
    CACHE_TTL_SECONDS: String(TTL_SECONDS),
    CACHE_STALE_SECONDS: String(STALE_SECONDS),
    UPSTREAM_BREAKER_FAILURES: String(BREAKER_FAILURES),
    UPSTREAM_BREAKER_COOLDOWN_MS: String(COOL_DOWN_MS),
    PROXY_READS_PER_MINUTE: '100000',
    METRICS_TOKEN,
  },
  loggerInstance: log.logger,
}))
let client: TestClient
beforeAll(async () => {
  client = (await signedInClient(t, { verified: true })).client
})
beforeEach(async () => {
  fake.reset()
  // Any market id is a market here (the simulator knows five); a test's own rules come first.
  fake.on('GET', '/markets', (call) => ({ body: { data: { query: call.query } } }))
  // Each test starts with the breaker closed: past any cool-down, one read that works.
  t.clock.advance(COOL_DOWN_MS)
  expect((await client.get(`/api/markets?market_id=${unique('UP')}`)).status).toBe(200)
  fake.calls.length = 0
})

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`
const marketsOf = (market: string) => `/api/markets?market_id=${market}`
const DOWN: FakeAnswer = { status: 503, body: { message: 'down for maintenance' } }

async function metrics() {
  const res = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  const samples = parseSamples(await res.text())
  return {
    stale: (reason: string) => sampleValue(samples, 'trading_api_cache_stale_answers_total', { reason }),
    upstreamUp: sampleValue(samples, 'trading_api_dependency_up', { dependency: 'upstream' }),
    // Calls the breaker refused, whatever their method.
    refused: samples
      .filter((s) => s.name === 'trading_api_upstream_errors_total' && s.labels.outcome === 'circuit_open')
      .reduce((sum, s) => sum + s.value, 0),
  }
}

async function timed(path: string, via = client) {
  const started = performance.now()
  const res = await via.get(path)
  return { res, ms: performance.now() - started }
}

describe('an entry past its TTL while the upstream fails', () => {
  const outages: [string, string, () => Promise<unknown> | unknown, string][] = [
    ['a 503', 'status_5xx', () => fake.on('GET', '/markets', DOWN), '; fwd-status=503'],
    ['a time-out', 'timeout', () => fake.on('GET', '/markets', { hang: true }), ''],
    ['a refused connection', 'network', () => fake.stop(), ''],
  ]

  it.each(outages)(
    'answers 200 with the old data on %s, says it is stale and counts it',
    async (_name, reason, goDown, fwdStatus) => {
      const market = unique('EU')
      fake.on('GET', '/markets', { body: { data: { id: market, price: 1 } } })
      const warm = await client.get(marketsOf(market))
      expect(warm.headers.get('x-cache')).toBe('MISS')
      const before = await metrics()

      t.clock.advance((TTL_SECONDS + 30) * 1000)
      await goDown()
      try {
        const res = await client.get(marketsOf(market))
        expect(res.status).toBe(200)
        expect(res.data).toEqual({ id: market, price: 1 })
        expect(res.headers.get('x-cache')).toBe('STALE')
        expect(res.headers.get('cache-status')).toBe(
          `trading-api; fwd=stale${fwdStatus}; ttl=-30; detail=stale-if-error`,
        )
        const during = await metrics()
        expect(during.stale(reason) - before.stale(reason)).toBe(1)
        expect(during.upstreamUp).toBe(0)
      } finally {
        if (reason === 'network') await fake.start()
      }

      // Back: the next read asks the upstream and answers (and keeps) what it says now.
      fake.reset()
      fake.on('GET', '/markets', { body: { data: { id: market, price: 2 } } })
      const back = await client.get(marketsOf(market))
      expect(back.data).toEqual({ id: market, price: 2 })
      expect(back.headers.get('cache-status')).toBe('trading-api; fwd=stale')
      expect((await client.get(marketsOf(market))).headers.get('x-cache')).toBe('HIT')
      expect((await metrics()).upstreamUp).toBe(1)
    },
  )

  it('is not answered past CACHE_STALE_SECONDS: the 500 {"error"} as before', async () => {
    const market = unique('OLD')
    await client.get(marketsOf(market))
    t.clock.advance((TTL_SECONDS + STALE_SECONDS + 1) * 1000)
    fake.on('GET', '/markets', DOWN)
    const res = await client.get(marketsOf(market))
    expect(res.status).toBe(500)
    expect(res.data).toEqual({ error: 'Upstream request failed with status 503' })
    expect(res.headers.get('cache-status')).toBeNull()
  })

  it('is not answered for a 4xx: that is the upstream answering, not failing', async () => {
    const market = unique('GONE')
    await client.get(marketsOf(market))
    t.clock.advance((TTL_SECONDS + 1) * 1000)
    fake.on('GET', '/markets', { status: 404, body: { message: 'no such market' } })
    const res = await client.get(marketsOf(market))
    expect(res.status).toBe(500)
    expect(res.data).toEqual({ error: 'Upstream request failed with status 404' })
  })

  it("is one user's own: another user never gets it, stale or not", async () => {
    const { client: other } = await signedInClient(t)
    fake.on('GET', '/accounts', (call) => ({ body: { data: [{ owner: call.headers['x-user-id'] }] } }))
    const mine = (await client.get('/api/accounts')).data
    t.clock.advance((TTL_SECONDS + 1) * 1000)
    fake.on('GET', '/accounts', DOWN)
    const stale = await client.get('/api/accounts')
    expect([stale.status, stale.headers.get('x-cache')]).toEqual([200, 'STALE'])
    expect(stale.data).toEqual(mine)
    const theirs = await other.get('/api/accounts')
    expect(theirs.status).toBe(500)
    expect(theirs.text).not.toContain(`"owner"`)
  })

  it('is never answered once a write cleared it, and a write never answers from the cache', async () => {
    fake.on('GET', '/strategies', { body: { data: [{ id: 1, status: 'on' }] } })
    expect((await client.get('/api/strategies')).status).toBe(200)
    t.clock.advance((TTL_SECONDS + 1) * 1000)
    fake.on('*', /.*/, DOWN)
    // The write fails (no stale data for writes), and still clears the user's strategy reads.
    const write = await client.post('/api/strategy/1/status/off', {})
    expect(write.status).toBe(500)
    expect(write.data).toEqual({ error: 'Upstream request failed with status 503' })
    const read = await client.get('/api/strategies')
    expect(read.status).toBe(500)
    expect(read.data).toEqual({ error: 'Upstream request failed with status 503' })
  })

  it('is never answered by the warm-read lane, which still answers fresh hits with Cache-Status', async () => {
    await client.get('/api/markets')
    const laned = t.app.warmReads.served
    const hit = await client.get('/api/markets')
    expect(t.app.warmReads.served).toBe(laned + 1)
    expect(hit.headers.get('cache-status')).toBe('trading-api; hit')

    t.clock.advance((TTL_SECONDS + 5) * 1000)
    fake.on('GET', '/markets', DOWN)
    const stale = await client.get('/api/markets')
    expect(t.app.warmReads.served).toBe(laned + 1)
    expect(stale.headers.get('x-cache')).toBe('STALE')
    expect(stale.headers.get('cache-status')).toBe(
      'trading-api; fwd=stale; fwd-status=503; ttl=-5; detail=stale-if-error',
    )
    expect(stale.data).toEqual(hit.data)
  })
})

describe('an entry near the end of its TTL', () => {
  it('is answered at once while one background call refreshes it', async () => {
    const market = unique('SWR')
    fake.on('GET', '/markets', { body: { data: { id: market, price: 1 } } })
    await client.get(marketsOf(market))
    t.clock.advance(TTL_SECONDS * 0.9 * 1000)
    fake.on('GET', '/markets', { body: { data: { id: market, price: 2 } }, delayMs: 500 })

    const readers = await Promise.all(Array.from({ length: 5 }, () => timed(marketsOf(market))))
    for (const { res, ms } of readers) {
      expect(res.data).toEqual({ id: market, price: 1 })
      expect(res.headers.get('cache-status')).toBe('trading-api; hit')
      expect(ms).toBeLessThan(AT_ONCE_MS)
    }
    await sleep(700)
    expect(fake.callsTo('GET', '/markets')).toHaveLength(2)
    const refreshed = await client.get(marketsOf(market))
    expect([refreshed.data, refreshed.headers.get('x-cache')]).toEqual([{ id: market, price: 2 }, 'HIT'])
    // Refreshed: a whole TTL from the refresh, not from the first read.
    t.clock.advance(TTL_SECONDS * 0.5 * 1000)
    expect((await client.get(marketsOf(market))).headers.get('x-cache')).toBe('HIT')
    expect(fake.callsTo('GET', '/markets')).toHaveLength(2)
  })
})

describe('the circuit breaker', () => {
  /** Faults enough to open the circuit: reads of cold keys, each cut at the time-out. */
  async function openCircuit() {
    fake.on('*', /.*/, { hang: true })
    const faults = await Promise.all(
      Array.from({ length: BREAKER_FAILURES }, () => client.get(marketsOf(unique('COLD')))),
    )
    expect(faults.map((res) => res.data)).toEqual(
      Array(BREAKER_FAILURES).fill({ error: `Upstream request timed out after ${TIMEOUT_MS} ms` }),
    )
  }

  it('opens after repeated faults: reads go stale or fail at once, writes fail at once, nothing is sent', async () => {
    const market = unique('HOT')
    await client.get(marketsOf(market))
    t.clock.advance((TTL_SECONDS + 20) * 1000)
    await openCircuit()
    const before = await metrics()
    const sent = fake.calls.length

    const stale = await timed(marketsOf(market))
    expect(stale.res.status).toBe(200)
    expect(stale.res.headers.get('cache-status')).toBe('trading-api; hit; ttl=-20; detail=circuit-open')
    expect(stale.ms).toBeLessThan(AT_ONCE_MS)

    const cold = await timed(marketsOf(unique('COLD')))
    expect(cold.res.status).toBe(500)
    expect(cold.res.data).toEqual({ error: 'Upstream service is unavailable' })
    expect(cold.ms).toBeLessThan(AT_ONCE_MS)

    const started = performance.now()
    const write = await client.post('/api/strategies', { name: 'Breakout' })
    expect(write.status).toBe(500)
    expect(write.data).toEqual({ error: 'Upstream service is unavailable' })
    expect(performance.now() - started).toBeLessThan(AT_ONCE_MS)

    expect(fake.calls.length).toBe(sent)
    const after = await metrics()
    expect(after.stale('circuit_open') - before.stale('circuit_open')).toBe(1)
    // Each of the three calls refused by the breaker, none of them sent.
    expect(after.refused - before.refused).toBe(3)
    expect(after.upstreamUp).toBe(0)
  })

  it('lets one probe through after the cool-down: a fault opens it again, an answer closes it', async () => {
    const market = unique('PROBE')
    fake.on('GET', '/markets', { body: { data: { id: market, price: 1 } } })
    await client.get(marketsOf(market))
    t.clock.advance((TTL_SECONDS + 1) * 1000)
    log.text = ''
    await openCircuit()

    // The probe hangs until the time-out; a read meanwhile does not wait for it.
    t.clock.advance(COOL_DOWN_MS)
    const probe = timed(marketsOf(unique('COLD')))
    await sleep(50)
    const meanwhile = await timed(marketsOf(market))
    expect(meanwhile.res.headers.get('cache-status')).toMatch(
      /^trading-api; hit; ttl=-\d+; detail=circuit-open$/,
    )
    expect(meanwhile.ms).toBeLessThan(AT_ONCE_MS)
    const failedProbe = await probe
    expect(failedProbe.res.data).toEqual({ error: `Upstream request timed out after ${TIMEOUT_MS} ms` })
    expect((await timed(marketsOf(unique('COLD')))).res.data).toEqual({
      error: 'Upstream service is unavailable',
    })

    // The upstream is back: after the next cool-down the probe gets fresh data, and the circuit closes.
    fake.reset()
    fake.on('GET', '/markets', { body: { data: { id: market, price: 2 } } })
    t.clock.advance(COOL_DOWN_MS)
    const fresh = await client.get(marketsOf(market))
    expect([fresh.status, fresh.data]).toEqual([200, { id: market, price: 2 }])
    expect(fresh.headers.get('cache-status')).toBe('trading-api; fwd=stale')
    expect((await client.get(marketsOf(unique('COLD')))).status).toBe(200)
    expect((await metrics()).upstreamUp).toBe(1)

    // One line when it went down and one when it came back, however many calls failed between.
    const health = log.lines().filter((line) => line.dependency === 'upstream')
    expect(health.map((line) => line.msg)).toEqual(['upstream unavailable', 'upstream available again'])
    expect(health[0]?.error).toBe(`TIMEOUT: Upstream request timed out after ${TIMEOUT_MS} ms`)
    expect(log.text).not.toContain(UPSTREAM_TOKEN)
  })
})
