import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SPEC_STRATEGY_ACTIONS } from '../../test/helpers/spec-strategy-actions.ts'
import { type RunningSimulator, startUpstreamSimulator } from './server.ts'
import { STRATEGY_ACTIONS } from './users/actions.ts'

// The simulated upstream over real HTTP, as the service's upstream client reaches it.
const TOKEN = 'sim-test-token-0123456789'
let sim: RunningSimulator

beforeAll(async () => {
  sim = await startUpstreamSimulator({ port: 0, token: TOKEN })
})
afterAll(() => sim.close())

interface CallOptions {
  user?: string
  body?: unknown
  token?: string | null
  target?: RunningSimulator
}

async function call(method: string, path: string, options: CallOptions = {}) {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (options.token !== null) headers.authorization = `Bearer ${options.token ?? TOKEN}`
  if (options.user) headers['x-user-id'] = options.user
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${(options.target ?? sim).url}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: text === '' ? undefined : JSON.parse(text) }
}

/** GET with the path sent byte for byte, as the service's undici client sends it. */
function rawGet(path: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(sim.url)
    const options = { hostname, port, path, headers: { authorization: `Bearer ${TOKEN}` } }
    const req = http.get(options, (res) => {
      let text = ''
      res.on('data', (chunk) => {
        text += chunk
      })
      res.on('end', () => resolve(JSON.parse(text)))
    })
    req.on('error', reject)
  })
}

let userCounter = 0
const newUser = () => `user-${process.pid}-${++userCounter}`

describe('bearer token', () => {
  it('answers 401 JSON without the token or with a wrong one, and serves the right one', async () => {
    const none = await call('GET', '/markets', { token: null })
    expect(none.status).toBe(401)
    expect(none.headers.get('content-type')).toBe('application/json')
    expect(none.json).toEqual({ message: 'Unauthenticated.' })
    const wrong = await call('GET', '/markets', { token: `${TOKEN}x` })
    expect(wrong.status).toBe(401)
    expect(wrong.text).not.toContain(TOKEN)
    const basic = await fetch(`${sim.url}/markets`, { headers: { authorization: TOKEN } })
    expect(basic.status).toBe(401)
    expect((await call('GET', '/markets')).status).toBe(200)
  })

  it('refuses to start without a token to check', async () => {
    await expect(startUpstreamSimulator({ port: 0, token: '' })).rejects.toThrow(/token/)
  })
})

describe('shared catalogue', () => {
  it('is deterministic: two simulators serve the same markets, tickers, calendar, news and accounts', async () => {
    const other = await startUpstreamSimulator({ port: 0, token: TOKEN })
    try {
      for (const path of [
        '/markets',
        '/tickers',
        '/market-calendar',
        '/news?page=3&per_page=7',
        '/legacy_analysis',
      ]) {
        const [a, b] = [await call('GET', path), await call('GET', path, { target: other })]
        expect(a.status, path).toBe(200)
        // Pagination links name each simulator's own host; everything else is byte-identical.
        expect(a.text.replaceAll(sim.url, ''), path).toBe(b.text.replaceAll(other.url, ''))
      }
      const user = newUser()
      const [mine, theirs] = [
        await call('GET', '/accounts', { user }),
        await call('GET', '/accounts', { user, target: other }),
      ]
      const { id: firstId } = mine.json.data[0]
      const { id: otherId } = theirs.json.data[0]
      const growth = await call('GET', `/accounts/${firstId}/growth`, { user })
      const otherGrowth = await call('GET', `/accounts/${otherId}/growth`, { user, target: other })
      expect(growth.json.data.points).toEqual(otherGrowth.json.data.points)
      expect(mine.json.data.map((a: any) => a.account_number)).toEqual(
        theirs.json.data.map((a: any) => a.account_number),
      )
    } finally {
      await other.close()
    }
  })

  it('lists several markets and a few hundred tickers, and answers one market by query or path', async () => {
    const markets = await call('GET', '/markets')
    expect(markets.json.data.map((m: any) => m.id)).toEqual(['US', 'EU', 'JP', 'CRYPTO', 'FX'])
    const one = await call('GET', '/markets?market_id=CRYPTO')
    expect(one.json.data).toMatchObject({ id: 'CRYPTO', name: 'Crypto', ticker_count: 20 })
    expect((await call('GET', '/markets/FX')).json.data.id).toBe('FX')
    expect((await call('GET', '/markets/MARS')).status).toBe(404)

    const tickers = (await call('GET', '/tickers')).json.data
    expect(tickers.length).toBe(300)
    expect(new Set(tickers.map((t: any) => t.symbol)).size).toBe(300)
    for (const t of tickers) expect(t.price).toBeGreaterThan(0)
    const crypto = (await call('GET', '/tickers?market_id=CRYPTO')).json.data
    expect(crypto.map((t: any) => t.symbol)).toContain('BTC-USD')
    expect(crypto.every((t: any) => t.market_id === 'CRYPTO')).toBe(true)
    const btc = await call('GET', '/tickers/BTC-USD')
    expect(btc.json.data).toMatchObject({ symbol: 'BTC-USD', name: 'Bitcoin', market_id: 'CRYPTO' })
  })

  it('reads each path parameter as one decoded segment', async () => {
    // `a%2Fb` is the symbol "a/b" (a missing ticker), not the path /tickers/a/b (a missing route).
    const slash = await call('GET', '/tickers/a%2Fb')
    expect(slash.status).toBe(404)
    expect(slash.json.message).toBe('No query results for model [App\\Models\\Ticker] a/b')
    // fetch() would resolve `%2e%2e` as `..` before sending; node:http sends the path as written.
    const dots = await rawGet('/tickers/%2e%2e')
    expect(dots.message).toBe('No query results for model [App\\Models\\Ticker] ..')
    expect((await call('GET', '/tickers/a/b')).json.message).toBe('The route tickers/a/b could not be found.')
  })

  it('answers the market calendar, legacy analysis and one news item', async () => {
    const calendar = (await call('GET', '/market-calendar')).json.data
    expect(calendar).toContainEqual({
      date: '2025-07-03',
      market_id: 'US',
      type: 'early_close',
      name: 'Independence Day (eve)',
      close_time: '13:00',
    })
    const dates = calendar.map((c: any) => c.date)
    expect(dates).toEqual([...dates].sort())
    const analysis = (await call('GET', '/legacy_analysis')).json.data
    expect(analysis).toHaveLength(24)
    expect(analysis[0]).toMatchObject({
      id: 1,
      sentiment: expect.stringMatching(/^(bullish|bearish|neutral)$/),
    })
    const item = await call('GET', '/news/1001')
    expect(item.json.data).toMatchObject({ id: 1001, category: 'crypto' })
    expect((await call('GET', '/news/99999')).status).toBe(404)
  })

  it('answers market balance for a filter set, the same numbers for the same filters, 422 without marketId', async () => {
    const filters = {
      marketId: 'US',
      filteredPeriod: '1w',
      filteredInterval: '1h',
      filteredSession: 'regular',
    }
    const first = await call('POST', '/market-balance', { body: { filters } })
    expect(first.status).toBe(200)
    expect(first.json.data).toMatchObject({
      market_id: 'US',
      period: '1w',
      interval: '1h',
      session: 'regular',
    })
    expect(first.json.data.series).toHaveLength(30)
    expect((await call('POST', '/market-balance', { body: { filters } })).text).toBe(first.text)
    const bad = await call('POST', '/market-balance', { body: { filters: { filteredPeriod: '1w' } } })
    expect(bad.status).toBe(422)
    expect(bad.json).toEqual({
      message: 'The filters.marketId field is required.',
      errors: { 'filters.marketId': ['The filters.marketId field is required.'] },
    })
  })
})

describe('paginated news', () => {
  it('answers a Laravel resource collection {data, links, meta} for page and per_page', async () => {
    const res = await call('GET', '/news?page=2&per_page=10')
    expect(res.status).toBe(200)
    const base = `${sim.url}/news`
    const url = (page: number) => `${base}?per_page=10&page=${page}`
    expect(Object.keys(res.json)).toEqual(['data', 'links', 'meta'])
    expect(res.json.data.map((n: any) => n.id)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20])
    expect(res.json.links).toEqual({ first: url(1), last: url(15), prev: url(1), next: url(3) })
    const pageLink = (page: number) => ({ url: url(page), label: String(page), page, active: page === 2 })
    expect(res.json.meta).toEqual({
      current_page: 2,
      from: 11,
      last_page: 15,
      // 15 pages is past Laravel's small window: 1..10, '...', the last two.
      links: [
        { url: url(1), label: '&laquo; Previous', page: 1, active: false },
        ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(pageLink),
        { url: null, label: '...', active: false },
        pageLink(14),
        pageLink(15),
        { url: url(3), label: 'Next &raquo;', page: 3, active: false },
      ],
      path: base,
      per_page: 10,
      to: 20,
      total: 150,
    })
  })

  it('defaults to 15 a page, treats a bad page as 1, and answers an empty page past the end', async () => {
    const first = (await call('GET', '/popular-news?page=abc')).json
    expect(first.data).toHaveLength(15)
    expect(first.meta).toMatchObject({
      current_page: 1,
      from: 1,
      to: 15,
      total: 60,
      last_page: 4,
      per_page: 15,
    })
    expect(first.links).toEqual({
      first: `${sim.url}/popular-news?page=1`,
      last: `${sim.url}/popular-news?page=4`,
      prev: null,
      next: `${sim.url}/popular-news?page=2`,
    })
    expect(first.meta.links[0]).toEqual({ url: null, label: '&laquo; Previous', page: null, active: false })
    const views = first.data.map((n: any) => n.views)
    expect(views).toEqual([...views].sort((a: number, b: number) => b - a))

    const past = (await call('GET', '/crypto-news?page=9&per_page=20')).json
    expect(past.data).toEqual([])
    expect(past.meta).toMatchObject({ current_page: 9, from: null, to: null, total: 80, last_page: 4 })
    expect(past.links.next).toBeNull()
    expect(past.meta.links.at(-1)).toEqual({ url: null, label: 'Next &raquo;', page: null, active: false })
  })
})

describe('per-user strategies and conditions', () => {
  it('keeps strategies per X-User-Id: 201 on create, 404 for another user, 204 on delete', async () => {
    const [alice, bob] = [newUser(), newUser()]
    const created = await call('POST', '/strategies', {
      user: alice,
      body: { name: 'Alice breakout', symbol: 'BTC-USD' },
    })
    expect(created.status).toBe(201)
    expect(created.json.data).toMatchObject({
      name: 'Alice breakout',
      symbol: 'BTC-USD',
      user_id: alice,
      status: 'off',
    })
    const id = created.json.data.id

    // A new user's first call seeds two strategies; the created one is a third with its own id.
    const listed = (await call('GET', '/strategies', { user: alice })).json.data.map((s: any) => s.id)
    expect(listed).toHaveLength(3)
    expect(new Set(listed).size).toBe(3)
    expect(listed.at(-1)).toBe(id)
    expect((await call('GET', '/strategies', { user: bob })).json.data.map((s: any) => s.id)).not.toContain(
      id,
    )
    for (const [method, path] of [
      ['GET', `/strategies/${id}`],
      ['PUT', `/strategies/${id}`],
      ['DELETE', `/strategies/${id}`],
      ['POST', `/strategy/${id}/status/on`],
      ['GET', `/strategy/${id}/conditions`],
    ] as const) {
      const res = await call(method, path, { user: bob, body: method === 'GET' ? undefined : {} })
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.json).toEqual({ message: `No query results for model [App\\Models\\Strategy] ${id}` })
    }
    expect((await call('GET', `/strategies/${id}`, { user: alice })).json.data.status).toBe('off')

    const updated = await call('PUT', `/strategies/${id}`, {
      user: alice,
      body: { name: 'Renamed', id: 999 },
    })
    expect(updated.status).toBe(200)
    expect(updated.json.data).toMatchObject({ id, name: 'Renamed' })
    // Seeded strategies take symbols from the user id, so either user may also own a BTC one.
    const aliceFound = (await call('GET', '/strategies/search/btc', { user: alice })).json.data
    expect(aliceFound.map((s: any) => s.id)).toContain(id)
    expect(aliceFound.every((s: any) => s.user_id === alice && /btc/i.test(s.symbol))).toBe(true)
    const bobFound = (await call('GET', '/strategies/search/btc', { user: bob })).json.data
    expect(bobFound.map((s: any) => s.id)).not.toContain(id)
    expect(bobFound.every((s: any) => s.user_id === bob)).toBe(true)

    const deleted = await call('DELETE', `/strategies/${id}`, { user: alice })
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe('')
    expect((await call('GET', `/strategies/${id}`, { user: alice })).status).toBe(404)
  })

  it('seeds each new user with strategies, conditions, signals and accounts of their own', async () => {
    const user = newUser()
    const strategies = (await call('GET', '/strategies', { user })).json.data
    expect(strategies).toHaveLength(2)
    const conditions = (await call('GET', `/strategy/${strategies[0].id}/conditions`, { user })).json.data
    expect(conditions).toHaveLength(2)
    expect(
      conditions.every((c: any) => c.strategy_id === strategies[0].id && typeof c.reading === 'number'),
    ).toBe(true)
    const signals = (await call('GET', '/signals', { user })).json.data
    expect(signals).toHaveLength(6)
    expect(new Set(signals.map((s: any) => s.strategy_id))).toEqual(new Set(strategies.map((s: any) => s.id)))
    // Signals follow the strategy's switch.
    await call('POST', `/strategy/${strategies[0].id}/signals/off`, { user, body: {} })
    expect((await call('GET', '/signals', { user })).json.data).toHaveLength(3)
  })

  it('keeps conditions per user with CRUD, and clears a strategy’s condition readings', async () => {
    const [alice, bob] = [newUser(), newUser()]
    const strategy = (await call('GET', '/strategies', { user: alice })).json.data[0]
    const created = await call('POST', '/conditions', {
      user: alice,
      body: {
        name: 'MACD cross',
        indicator: 'macd',
        operator: 'crosses_above',
        value: 0,
        strategy_id: strategy.id,
      },
    })
    expect(created.status).toBe(201)
    const id = created.json.data.id
    expect(created.json.data).toMatchObject({ name: 'MACD cross', strategy_id: strategy.id, reading: null })
    // A condition may not point at someone else's strategy.
    const foreign = await call('POST', '/conditions', {
      user: bob,
      body: { name: 'x', strategy_id: strategy.id },
    })
    expect(foreign.status).toBe(422)
    expect(foreign.json.errors).toEqual({ strategy_id: ['The selected strategy id is invalid.'] })
    expect((await call('GET', `/conditions/${id}`, { user: bob })).status).toBe(404)
    expect((await call('GET', '/conditions', { user: bob })).json.data.map((c: any) => c.id)).not.toContain(
      id,
    )
    const put = await call('PUT', `/conditions/${id}`, { user: alice, body: { value: 1.5 } })
    expect(put.json.data).toMatchObject({ id, value: 1.5, name: 'MACD cross' })

    const cleared = await call('POST', `/strategy/${strategy.id}/clear-conditions-readings`, {
      user: alice,
      body: {},
    })
    expect(cleared.status).toBe(200)
    expect(cleared.json.data).toMatchObject({ strategy_id: strategy.id, cleared: 3 })
    const after = (await call('GET', `/strategy/${strategy.id}/conditions`, { user: alice })).json.data
    expect(after.map((c: any) => c.reading)).toEqual([null, null, null])

    expect((await call('DELETE', `/conditions/${id}`, { user: bob })).status).toBe(404)
    const deleted = await call('DELETE', `/conditions/${id}`, { user: alice })
    expect(deleted.status).toBe(204)
    expect((await call('GET', `/conditions/${id}`, { user: alice })).status).toBe(404)
  })

  it('asks for X-User-Id on per-user paths', async () => {
    for (const path of ['/strategies', '/conditions', '/signals', '/accounts']) {
      const res = await call('GET', path)
      expect(res.status, path).toBe(400)
      expect(res.json).toEqual({ message: 'The X-User-Id header is required for per-user data.' })
    }
  })
})

const SPEC_SUFFIXES = SPEC_STRATEGY_ACTIONS

// For each suffix: the body sent, and what must differ on the strategy afterwards.
function expectation(suffix: string): {
  body: Record<string, unknown>
  check: (before: any, after: any) => void
} {
  const settings: Record<string, [string, unknown]> = {
    'update-name': ['name', 'Renamed by action'],
    'update-symbol': ['symbol', 'ETH-USD'],
    'update-direction': ['direction', 'both'],
    'update-timeframe': ['timeframe', '4h'],
    'update-allocation': ['allocation', { type: 'fixed', value: 2500 }],
    'update-sizing-ordering': ['sizing_ordering', { order_type: 'limit' }],
    'update-trailing-stop': ['trailing_stop', { enabled: true, percent: 1.5 }],
    'update-order-cancelation': ['order_cancelation', { enabled: true }],
    'update-chat-webhook-url': ['chat_webhook_url', 'https://chat.example.com/hooks/abc'],
    'update-risk-management': ['risk_management', { stop_loss_percent: 3 }],
  }
  const [group, name, move] = suffix.split('/')
  if (group === 'settings') {
    const [field, value] = settings[name as string] as [string, unknown]
    return {
      body: { [field]: value },
      check: (before, after) =>
        expect(after[field]).toEqual(
          typeof value === 'object' ? { ...before[field], ...(value as object) } : value,
        ),
    }
  }
  const flip = (read: (s: any) => boolean, m: string) => (before: any, after: any) =>
    expect(read(after)).toBe(m === 'toggle' ? !read(before) : m === 'on')
  if (['signals', 'trades', 'orders'].includes(group as string)) {
    return { body: {}, check: flip((s) => s[`${group}_enabled`], name as string) }
  }
  if (group === 'notifications' && move)
    return { body: {}, check: flip((s) => s.notifications[name as string], move) }
  const simple: Record<string, (before: any, after: any) => void> = {
    'notifications/send-chat-test-notification': (b, a) => {
      expect(b.last_test_notification_at).toBeNull()
      expect(a.last_test_notification_at).toEqual(expect.any(String))
    },
    retain: (_b, a) => expect(a).toMatchObject({ retained: true, retained_at: expect.any(String) }),
    'retain-stop': (_b, a) => expect(a).toMatchObject({ retained: false, retained_at: null }),
    deploy: (_b, a) =>
      expect(a).toMatchObject({ deployed: true, deployed_at: expect.any(String), status: 'on' }),
    'status/on': (_b, a) => expect(a.status).toBe('on'),
    'status/off': (_b, a) => expect(a.status).toBe('off'),
  }
  return { body: {}, check: simple[suffix] as (before: any, after: any) => void }
}

describe('strategy actions', () => {
  it('has exactly the 35 suffixes of the spec in its one table', () => {
    expect(SPEC_SUFFIXES).toHaveLength(35)
    expect(Object.keys(STRATEGY_ACTIONS).sort()).toEqual([...SPEC_SUFFIXES].sort())
  })

  it.each(SPEC_SUFFIXES.filter((s) => s !== 'duplicate'))(
    'POST /strategy/{id}/%s answers 200 with data and changes the strategy',
    async (suffix) => {
      const user = newUser()
      const strategy = (
        await call('POST', '/strategies', { user, body: { name: 'Action target', symbol: 'BTC-USD' } })
      ).json.data
      // Start from the opposite of what the action sets, so on, off and toggle all show a change.
      const on = suffix.endsWith('/on') || suffix === 'retain' || suffix === 'deploy'
      const flags = { signals_enabled: !on, trades_enabled: !on, orders_enabled: !on, retained: !on }
      const notifications = { signals: !on, trades: !on, orders: !on }
      const prepared = (
        await call('PUT', `/strategies/${strategy.id}`, {
          user,
          body: { ...flags, notifications, status: on ? 'off' : 'on' },
        })
      ).json.data
      const { body, check } = expectation(suffix)
      const res = await call('POST', `/strategy/${strategy.id}/${suffix}`, { user, body })
      expect(res.status, res.text).toBe(200)
      expect(res.json.data).toMatchObject({ id: strategy.id })
      check(prepared, res.json.data)
      // The change is kept, and logged as the strategy's latest activity.
      const stored = (await call('GET', `/strategies/${strategy.id}`, { user })).json.data
      expect(stored).toEqual(res.json.data)
      const activities = (await call('GET', `/strategy/${strategy.id}/activities`, { user })).json.data
      expect(activities[0]).toMatchObject({ strategy_id: strategy.id, action: suffix })
    },
  )

  it('POST /strategy/{id}/duplicate answers 200 with a new copy of the strategy', async () => {
    const user = newUser()
    const before = (await call('GET', '/strategies', { user })).json.data
    const original = before[0]
    const res = await call('POST', `/strategy/${original.id}/duplicate`, { user, body: {} })
    expect(res.status).toBe(200)
    expect(res.json.data).toMatchObject({
      name: `${original.name} (copy)`,
      symbol: original.symbol,
      duplicated_from: original.id,
      status: 'off',
      user_id: user,
    })
    expect(res.json.data.id).not.toBe(original.id)
    const after = (await call('GET', '/strategies', { user })).json.data
    expect(after.map((s: any) => s.id)).toEqual([...before.map((s: any) => s.id), res.json.data.id])
  })

  it('answers 422 for a setting of the wrong type and leaves the strategy as it was', async () => {
    const user = newUser()
    const strategy = (await call('GET', '/strategies', { user })).json.data[0]
    const res = await call('POST', `/strategy/${strategy.id}/settings/update-name`, {
      user,
      body: { name: 42 },
    })
    expect(res.status).toBe(422)
    expect(res.json).toEqual({
      message: 'The name field must be a string.',
      errors: { name: ['The name field must be a string.'] },
    })
    expect((await call('GET', `/strategies/${strategy.id}`, { user })).json.data).toEqual(strategy)
  })
})

describe('broker accounts', () => {
  it('answers a user’s accounts, balances, growth and PnL, and 404 for another user’s account', async () => {
    const [alice, bob] = [newUser(), newUser()]
    const accounts = (await call('GET', '/accounts', { user: alice })).json.data
    expect(accounts).toHaveLength(2)
    expect(accounts[0]).not.toHaveProperty('seed')
    const balances = (await call('GET', '/accounts/balances', { user: alice })).json.data
    expect(balances.map((b: any) => b.account_id)).toEqual(accounts.map((a: any) => a.id))
    const id = accounts[0].id
    const balance = (await call('GET', `/accounts/${id}/balance`, { user: alice })).json.data
    expect(balance).toEqual(balances[0])
    const growth = (await call('GET', `/accounts/${id}/growth`, { user: alice })).json.data
    expect(growth.points).toHaveLength(90)
    expect(growth.end_equity).toBe(balance.equity)
    const pnl = (await call('GET', `/accounts/${id}/pnl`, { user: alice })).json.data
    expect(pnl.points).toHaveLength(89)
    expect(pnl.total_pnl).toBeCloseTo(growth.end_equity - growth.start_equity, 1)
    for (const kind of ['balance', 'growth', 'pnl']) {
      const res = await call('GET', `/accounts/${id}/${kind}`, { user: bob })
      expect(res.status).toBe(404)
      expect(res.json).toEqual({ message: `No query results for model [App\\Models\\Account] ${id}` })
    }
  })
})

describe('unknown paths and methods', () => {
  it('answers 404 JSON for an unknown path and 405 for a known path with another method', async () => {
    const unknown = await call('GET', '/nowhere/at/all')
    expect(unknown.status).toBe(404)
    expect(unknown.headers.get('content-type')).toBe('application/json')
    expect(unknown.json).toEqual({ message: 'The route nowhere/at/all could not be found.' })
    const method = await call('DELETE', '/markets', { user: newUser() })
    expect(method.status).toBe(405)
    expect(method.json).toEqual({
      message: 'The DELETE method is not supported for route markets. Supported methods: GET.',
    })
    const malformed = await fetch(`${sim.url}/strategies`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'x-user-id': newUser(),
        'content-type': 'application/json',
      },
      body: '{"name":',
    })
    expect(malformed.status).toBe(400)
    expect(await malformed.json()).toEqual({ message: 'The request body is not valid JSON.' })
  })
})
