import { randomBytes, randomInt } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { askAgent, userMessage } from '../../test/helpers/ai-chat.ts'
import type { TestApp } from '../../test/helpers/build-test-app.ts'
import type { TestClient } from '../../test/helpers/client.ts'
import { eventually } from '../../test/helpers/echo.ts'
import { grantCredits, signedInClient } from '../../test/helpers/factories.ts'
import { memoryLog } from '../../test/helpers/memory-log.ts'
import { metricTypes, parseSamples, type Sample, sampleValue } from '../../test/helpers/prometheus.ts'
import { upstreamEnv } from '../../test/helpers/proxy.ts'
import { PusherSocket } from '../../test/helpers/pusher-socket.ts'
import { sharedDatabase } from '../../test/helpers/test-database.ts'
import { appUnderTest, fakeModelUnderTest, fakeUpstreamUnderTest } from '../../test/helpers/under-test.ts'
import type { UserRow } from '../db/schema/index.ts'

const TOKEN = `metrics-${randomBytes(16).toString('hex')}`
const P = 'trading_api_'

// The production logger settings, writing to memory: the token must never reach a line.
const log = memoryLog()
const { logger } = log

const model = fakeModelUnderTest()
const upstream = fakeUpstreamUnderTest()
/** The app with METRICS_TOKEN set, and one without it on the same database. */
const t = appUnderTest(() => ({
  loggerInstance: logger,
  env: {
    METRICS_TOKEN: TOKEN,
    AI_BASE_URL: model.url,
    AI_API_KEY: 'sk-test-key',
    AI_MODEL: 'fake-gpt',
    ...upstreamEnv(upstream.url),
  },
}))
const off = appUnderTest(() => ({ database: sharedDatabase(t.database) }))
let client: TestClient
let user: UserRow

beforeAll(async () => {
  // A user id of seven digits: found in a label, it could be nothing else.
  await t.database.db.execute(
    sql`select setval(pg_get_serial_sequence('users', 'id'), ${randomInt(1_000_000, 9_000_000)})`,
  )
  ;({ client, user } = await signedInClient(t, { verified: true }))
})
beforeEach(() => {
  model.reset()
  upstream.reset()
})

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`

function request(app: TestApp, method: string, path: string, authorization?: string) {
  return fetch(`${app.baseUrl}${path}`, {
    method,
    headers: authorization === undefined ? {} : { authorization },
  })
}

/** A scrape with the token: the response, its text and its samples. */
async function scrape() {
  const res = await request(t, 'GET', '/metrics', `Bearer ${TOKEN}`)
  const text = await res.text()
  expect(res.status, text).toBe(200)
  return { res, text, samples: parseSamples(text) }
}

/** The samples now, and a reader of how much a sample moved since. */
async function baseline() {
  const before = (await scrape()).samples
  return async () => {
    const after = (await scrape()).samples
    return (name: string, labels: Record<string, string> = {}) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels)
  }
}

/** What a client sees of an answer, minus what differs per request (date, request id). */
async function shape(res: Response) {
  const headers = Object.fromEntries(
    [...res.headers].filter(([name]) => !['date', 'x-request-id', 'keep-alive'].includes(name)),
  )
  return { status: res.status, headers, body: await res.text() }
}

describe('GET /metrics', () => {
  it('is an unknown path when METRICS_TOKEN is unset, token or not', async () => {
    for (const authorization of [undefined, `Bearer ${TOKEN}`]) {
      const res = await request(off, 'GET', '/metrics', authorization)
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({ message: 'The route metrics could not be found.' })
    }
  })

  it.each([
    ['no Authorization', undefined],
    ['a wrong token', 'Bearer wrong-token-of-the-same-kind-0123456789'],
    ['the token cut short', `Bearer ${TOKEN.slice(0, -1)}`],
    ['the token and more', `Bearer ${TOKEN}0`],
    ['the token without its scheme', TOKEN],
    ['the token under another scheme', `Basic ${TOKEN}`],
  ])('answers %s exactly as an unknown path', async (_label, authorization) => {
    for (const method of ['GET', 'HEAD']) {
      const answer = await shape(await request(t, method, '/metrics', authorization))
      expect(answer.status).toBe(404)
      expect(answer).toEqual(await shape(await request(off, method, '/metrics', authorization)))
    }
  })

  it('answers another method as on an unknown path (404, not 405), even with the token', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const answer = await shape(await request(t, method, '/metrics', `Bearer ${TOKEN}`))
      expect(answer.status).toBe(404)
      expect(answer).toEqual(await shape(await request(off, method, '/metrics', `Bearer ${TOKEN}`)))
    }
  })

  it('answers the token with the Prometheus text of every series, uncached and without cookies', async () => {
    const { res, text, samples } = await scrape()
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('set-cookie')).toBeNull()
    expect(res.headers.get('x-ratelimit-limit')).toBeNull()
    const types = metricTypes(text)
    expect(Object.fromEntries([...types].filter(([name]) => name.startsWith(P)))).toEqual({
      [`${P}http_requests_total`]: 'counter',
      [`${P}http_request_duration_seconds`]: 'histogram',
      [`${P}cache_hits_total`]: 'counter',
      [`${P}cache_misses_total`]: 'counter',
      [`${P}cache_stale_answers_total`]: 'counter',
      [`${P}dependency_up`]: 'gauge',
      [`${P}upstream_request_duration_seconds`]: 'histogram',
      [`${P}upstream_errors_total`]: 'counter',
      [`${P}outbox_rows`]: 'gauge',
      [`${P}realtime_open_sockets`]: 'gauge',
      [`${P}realtime_occupied_channels`]: 'gauge',
      [`${P}realtime_subscriptions`]: 'gauge',
      [`${P}realtime_buffered_bytes`]: 'gauge',
      [`${P}realtime_messages_dropped_total`]: 'counter',
      [`${P}credit_hold_transitions_total`]: 'counter',
      [`${P}credit_hold_expirations_total`]: 'counter',
      [`${P}payment_webhook_events_total`]: 'counter',
      [`${P}ai_calls_total`]: 'counter',
      [`${P}ai_tokens_total`]: 'counter',
      // PGlite is one in-process connection: no pool series.
      ...(t.database.kind === 'postgres'
        ? { [`${P}db_pool_connections`]: 'gauge', [`${P}db_pool_waiting_queries`]: 'gauge' }
        : {}),
    })
    expect(types.get('nodejs_eventloop_lag_seconds')).toBe('gauge')
    expect(types.get('nodejs_eventloop_lag_p99_seconds')).toBe('gauge')
    // Gauges read at scrape have their values; counters of a fixed set of transitions start at 0.
    const names = (labels: string) => samples.filter((s) => s.name === `${P}${labels}`).map((s) => s.labels)
    expect(names('outbox_rows')).toEqual([{ state: 'pending' }, { state: 'failed' }])
    expect(names('realtime_open_sockets')).toEqual([{}])
    expect(names('credit_hold_expirations_total')).toEqual([{}])
    expect(names('credit_hold_transitions_total').map((labels) => labels.transition)).toEqual([
      'created',
      'captured',
      'released',
      'transferred',
      'refused',
    ])
    if (t.database.kind === 'postgres') {
      expect(sampleValue(samples, `${P}db_pool_connections`, { state: 'total' })).toBeGreaterThan(0)
    }
  })

  it('never logs the token, though every scrape and refusal is log.text', async () => {
    log.text = ''
    await scrape()
    await request(t, 'GET', '/metrics', `Bearer ${TOKEN.slice(0, -1)}`)
    const lines = () => log.text.split('\n').filter((line) => line.includes('"url":"/metrics"'))
    await eventually(() => lines().length === 2)
    expect(lines().map((line) => JSON.parse(line).status)).toEqual([200, 404])
    expect(log.text).not.toContain(TOKEN.slice(0, -1))
  })
})

describe('the series', () => {
  it('count requests by method, route pattern and status, with their latency', async () => {
    const strategyId = String(randomInt(1_000_000_000, 2_000_000_000))
    const missing = unique('no-such-path')
    const moved = await baseline()
    for (let i = 0; i < 3; i++) expect((await request(t, 'GET', '/up')).status).toBe(200)
    upstream.on('GET', '/strategies/:id', { body: { data: { id: strategyId } } })
    expect((await client.get(`/api/strategies/${strategyId}`)).status).toBe(200)
    expect((await request(t, 'GET', `/${missing}`)).status).toBe(404)
    expect((await request(t, 'POST', '/up')).status).toBe(405)

    const delta = await moved()
    const up = { method: 'GET', route: '/up', status_code: '200' }
    expect(delta(`${P}http_requests_total`, up)).toBe(3)
    expect(delta(`${P}http_request_duration_seconds_count`, up)).toBe(3)
    expect(delta(`${P}http_request_duration_seconds_sum`, up)).toBeGreaterThan(0)
    expect(delta(`${P}http_request_duration_seconds_bucket`, { ...up, le: '+Inf' })).toBe(3)
    const strategy = { method: 'GET', route: '/api/strategies/:id', status_code: '200' }
    expect(delta(`${P}http_requests_total`, strategy)).toBe(1)
    const unmatched = { route: 'unmatched', method: 'GET', status_code: '404' }
    expect(delta(`${P}http_requests_total`, unmatched)).toBe(1)
    expect(delta(`${P}http_requests_total`, { ...unmatched, method: 'POST', status_code: '405' })).toBe(1)
    // Patterns, never the path asked for.
    const { text } = await scrape()
    expect(text).not.toContain(strategyId)
    expect(text).not.toContain(missing)
  })

  it('count a proxied read missing then hitting the cache, and the upstream call and failure behind them', async () => {
    const market = unique('US')
    upstream.on('GET', '/markets', { body: { data: { id: market } } })
    const moved = await baseline()
    const first = await client.get(`/api/markets?market_id=${market}`)
    const second = await client.get(`/api/markets?market_id=${market}`)
    expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'HIT'])
    upstream.on('GET', '/markets', { status: 503, body: { message: 'down' } })
    expect((await client.get(`/api/markets?market_id=${unique('EU')}`)).status).toBe(500)

    const delta = await moved()
    expect(delta(`${P}cache_misses_total`, { layer: 'memory' })).toBe(2)
    expect(delta(`${P}cache_hits_total`, { layer: 'memory' })).toBe(1)
    const answered = { method: 'GET', outcome: '2xx' }
    expect(delta(`${P}upstream_request_duration_seconds_count`, answered)).toBe(1)
    expect(delta(`${P}upstream_errors_total`, answered)).toBe(0)
    const failed = { method: 'GET', outcome: '5xx' }
    expect(delta(`${P}upstream_request_duration_seconds_count`, failed)).toBe(1)
    expect(delta(`${P}upstream_errors_total`, failed)).toBe(1)
  })

  it('count credit holds by transition, refusals included', async () => {
    await grantCredits(t.database.db, user.id, 3)
    const [a, b, c, d] = [unique('A'), unique('B'), unique('C'), unique('D')]
    const moved = await baseline()
    const hold = (order: string, credits: number) =>
      client.post('/api/credit-holds', { broker_parent_order_id: order, credits_amount: credits })
    expect((await hold(a, 1)).status).toBe(201)
    expect((await client.post('/api/credit-holds/capture', { broker_parent_order_id: a })).data).toEqual({
      captured: true,
    })
    expect((await hold(b, 1)).status).toBe(201)
    expect((await client.post('/api/credit-holds/release', { broker_parent_order_id: b })).data).toEqual({
      released: true,
    })
    expect((await hold(c, 1)).status).toBe(201)
    const transfer = { from_broker_parent_order_id: c, to_broker_parent_order_id: d }
    expect((await client.post('/api/credit-holds/transfer', transfer)).status).toBe(200)
    expect((await hold(unique('E'), 1000)).status).toBe(422)
    // The same hold again changes nothing, and counts nothing.
    expect((await hold(a, 1)).status).toBe(200)

    const delta = await moved()
    const of = (transition: string) => delta(`${P}credit_hold_transitions_total`, { transition })
    expect(['created', 'captured', 'released', 'transferred', 'refused'].map(of)).toEqual([3, 1, 1, 1, 1])
  })

  it('show outbox rows pending and failed, counted when scraped', async () => {
    const refuse = async () => {
      throw new Error('refused')
    }
    t.app.outbox.handle('metrics-test-failing', refuse, { maxAttempts: 1 })
    await t.app.outbox.drain()
    const moved = await baseline()
    // A kind no worker handles stays pending.
    await t.app.outbox.enqueue('metrics-test-waiting', {})
    await t.app.outbox.enqueue('metrics-test-failing', {})
    expect(await t.app.outbox.drain()).toMatchObject({ failed: 1 })

    const delta = await moved()
    expect(delta(`${P}outbox_rows`, { state: 'pending' })).toBe(1)
    expect(delta(`${P}outbox_rows`, { state: 'failed' })).toBe(1)
  })

  it('show open sockets, occupied channels and subscriptions, read when scraped', async () => {
    const sockets = async () => sampleValue((await scrape()).samples, `${P}realtime_open_sockets`)
    const before = await sockets()
    const moved = await baseline()
    const socket = await PusherSocket.open(t.baseUrl, t.config.realtime.key)
    const subscribed = await socket.subscribe(unique('metrics'))
    expect(subscribed.event).toBe('pusher_internal:subscription_succeeded')
    const delta = await moved()
    expect(delta(`${P}realtime_open_sockets`)).toBe(1)
    expect(delta(`${P}realtime_occupied_channels`)).toBe(1)
    expect(delta(`${P}realtime_subscriptions`)).toBe(1)

    socket.close()
    await eventually(async () => (await sockets()) === before)
  })

  it('count AI calls by agent and status, and the tokens of completed ones', async () => {
    // The answers cost credits (docs/credits.md): enough for both, whatever the hold test left.
    await grantCredits(t.database.db, user.id, 2)
    const moved = await baseline()
    model.reply({ text: 'Fine, thanks.', usage: { prompt_tokens: 40, completion_tokens: 7 } })
    expect((await askAgent(client, 'trading', [userMessage('How are you?')])).text).toBe('Fine, thanks.')
    model.reply({ status: 500, message: 'provider down' })
    await askAgent(client, 'assistant', [userMessage('Still there?')])

    const delta = await eventually(async () => {
      const reader = await moved()
      return reader(`${P}ai_calls_total`, { agent: 'assistant', status: 'failed' }) === 1 && reader
    })
    expect(delta(`${P}ai_calls_total`, { agent: 'trading', status: 'completed' })).toBe(1)
    expect(delta(`${P}ai_tokens_total`, { agent: 'trading', direction: 'input' })).toBe(40)
    expect(delta(`${P}ai_tokens_total`, { agent: 'trading', direction: 'output' })).toBe(7)
    expect(delta(`${P}ai_tokens_total`, { agent: 'assistant', direction: 'input' })).toBe(0)
  })

  it("never carry the user's id or email, nor any path, in a label", async () => {
    const { samples } = await scrape()
    expect(samples.length).toBeGreaterThan(100)
    const values = samples.flatMap((sample: Sample) => Object.values(sample.labels))
    const leaks = values.filter(
      (value) => value.includes(String(user.id)) || value.includes(user.email) || value.includes('@'),
    )
    expect(leaks).toEqual([])
    const routes = new Set(samples.flatMap((sample) => sample.labels.route ?? []))
    expect(routes.has('/api/strategies/:id')).toBe(true)
    expect([...routes].filter((route) => route !== 'unmatched' && !route.startsWith('/'))).toEqual([])
  })
})
