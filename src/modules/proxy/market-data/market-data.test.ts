import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { upstreamEnv } from '../../../../test/helpers/proxy.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../../../test/helpers/under-test.ts'

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({ env: upstreamEnv(fake.url) }))
let client: TestClient
beforeAll(async () => {
  ;({ client } = await signedInClient(t, { verified: true }))
})
beforeEach(() => {
  fake.reset()
  // Shared reads are cached across tests: every test below reads paths or queries of its own.
  fake.on('GET', /.*/, (call) => ({ body: { data: { url: call.url }, extra: 'dropped' } }))
})

describe('markets, tickers, calendar and analysis', () => {
  it.each([
    ['/api/markets', '/markets'],
    ['/api/markets?market_id=NYSE', '/markets?market_id=NYSE'],
    ['/api/markets/LSE', '/markets/LSE'],
    ['/api/tickers', '/tickers'],
    ['/api/tickers?market_id=NYSE', '/tickers?market_id=NYSE'],
    ['/api/tickers/BRK.B', '/tickers/BRK.B'],
    ['/api/market-calendar', '/market-calendar'],
    ['/api/legacy_analysis', '/legacy_analysis'],
  ])('GET %s answers the data member of %s', async (path, upstream) => {
    const res = await client.get(path)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ url: upstream })
    expect(res.headers.get('x-cache')).toBe('MISS')
    expect(fake.calls.map((c) => c.url)).toEqual([upstream])
  })

  it('answers the one market market_id names, as the upstream does, shared by everyone', async () => {
    fake.on('GET', '/markets', (call) => ({
      body: { data: new URLSearchParams(call.query).has('market_id') ? { id: 'XETRA' } : [{ id: 'XETRA' }] },
    }))
    const { client: other } = await signedInClient(t)
    expect((await client.get('/api/markets?market_id=XETRA')).data).toEqual({ id: 'XETRA' })
    const again = await other.get('/api/markets?market_id=XETRA')
    expect(again.data).toEqual({ id: 'XETRA' })
    expect(again.headers.get('x-cache')).toBe('HIT')
    expect(fake.calls).toHaveLength(1)
  })

  it('refuses an empty or oversized market_id with a 422, asking nothing', async () => {
    const empty = await client.get('/api/tickers?market_id=')
    expect(empty.status).toBe(422)
    expect(empty.data.errors).toEqual({ market_id: ['The market id field is required.'] })
    const long = await client.get(`/api/markets?market_id=${'x'.repeat(192)}`)
    expect(long.status).toBe(422)
    expect(fake.calls).toHaveLength(0)
  })
})

describe('news', () => {
  const page = (name: string) => ({
    data: [{ id: 1, title: `${name} item` }],
    links: { first: null, next: null },
    meta: { current_page: 2, per_page: 10, total: 11 },
  })

  it.each(['news', 'popular-news', 'crypto-news'])(
    'GET /api/%s answers the upstream page whole',
    async (name) => {
      fake.on('GET', `/${name}`, { body: page(name) })
      const res = await client.get(`/api/${name}?page=2&per_page=10`)
      expect(res.status).toBe(200)
      expect(res.data).toEqual(page(name))
      expect(fake.calls.map((c) => c.url)).toEqual([`/${name}?page=2&per_page=10`])
    },
  )

  it.each(['news', 'popular-news', 'crypto-news'])(
    "GET /api/%s points every page link at this API's URL, never at the upstream",
    async (name) => {
      // As the upstream's Laravel paginator writes them: its own host, plus anything it appends.
      const up = (query: string) => `${fake.url}/v2/${name}?${query}`
      fake.on('GET', `/${name}`, {
        body: {
          data: [{ id: 7, url: 'https://news.example/story-7' }],
          links: { first: up('per_page=5&page=1'), last: up('per_page=5&page=4'), prev: null, next: 'junk' },
          meta: {
            current_page: 1,
            from: 1,
            last_page: 4,
            links: [
              { url: null, label: '&laquo; Previous', page: null, active: false },
              { url: up('per_page=5&page=1&api_token=secret'), label: '1', page: 1, active: true },
              { url: null, label: '...', active: false },
              { url: '/relative?page=4', label: '4', page: 4, active: false },
            ],
            path: `${fake.url}/v2/${name}`,
            per_page: 5,
            to: 5,
            total: 20,
            next_page_url: up('page=2'),
            mirror: '//cdn.upstream.example/page',
          },
          debug: { upstream: fake.url },
        },
      })
      const res = await client.get(`/api/${name}?per_page=5&page=${name.length}`)
      expect(res.status).toBe(200)
      const own = `${t.config.appUrl}/api/${name}`
      expect(res.data).toEqual({
        data: [{ id: 7, url: 'https://news.example/story-7' }],
        links: {
          first: `${own}?per_page=5&page=1`,
          last: `${own}?per_page=5&page=4`,
          prev: null,
          next: null,
        },
        meta: {
          current_page: 1,
          from: 1,
          last_page: 4,
          links: [
            { url: null, label: '&laquo; Previous', page: null, active: false },
            { url: `${own}?per_page=5&page=1`, label: '1', page: 1, active: true },
            { url: null, label: '...', active: false },
            { url: `${own}?page=4`, label: '4', page: 4, active: false },
          ],
          path: own,
          per_page: 5,
          to: 5,
          total: 20,
          next_page_url: `${own}?page=2`,
          mirror: own,
        },
      })
      expect(res.text).not.toContain(fake.url.replace('http://', ''))
      expect(res.text).not.toContain('secret')
      // Cached as rewritten: the next reader gets the same links from the cache.
      const again = await client.get(`/api/${name}?page=${name.length}&per_page=5`)
      expect(again.headers.get('x-cache')).toBe('HIT')
      expect(again.data).toEqual(res.data)
    },
  )

  it("rewrites the simulator's own pages: every URL in the answer is this API's", async () => {
    fake.reset() // the simulator answers, as the real upstream would
    const res = await client.get('/api/popular-news?page=2&per_page=7')
    expect(res.status).toBe(200)
    const own = `${t.config.appUrl}/api/popular-news`
    const urls = [
      ...Object.values(res.data.links),
      res.data.meta.path,
      ...res.data.meta.links.map((link: { url: string | null }) => link.url),
    ].filter((url) => url !== null)
    expect(urls.length).toBeGreaterThan(5)
    for (const url of urls) expect(url).toMatch(new RegExp(`^${own.replace(/[.?/]/g, '\\$&')}(\\?|$)`))
    expect(res.data.links.next).toBe(`${own}?per_page=7&page=3`)
  })

  it.each([
    ['page=0', { page: ['The page field must be at least 1.'] }],
    ['page=abc', { page: ['The page field must be an integer.'] }],
    ['per_page=0', { per_page: ['The per page field must be at least 1.'] }],
    ['per_page=101', { per_page: ['The per page field must not be greater than 100.'] }],
  ])('refuses %s with a 422, asking nothing', async (query, errors) => {
    const res = await client.get(`/api/crypto-news?${query}`)
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual(errors)
    expect(fake.calls).toHaveLength(0)
  })

  it('reads one news item', async () => {
    const res = await client.get('/api/news/n-77')
    expect(res.data).toEqual({ url: '/news/n-77' })
  })
})

describe('POST /api/market-balance', () => {
  const filters = {
    marketId: 'NYSE',
    filteredPeriod: '1M',
    filteredInterval: '1D',
    filteredSession: 'regular',
  }

  it('forwards the filters and answers the data member, never cached', async () => {
    fake.on('POST', '/market-balance', (call) => ({ body: { data: { got: call.body } } }))
    for (let i = 0; i < 2; i++) {
      const res = await client.post('/api/market-balance', { filters: { ...filters, unknown: 1 }, other: 2 })
      expect(res.status).toBe(200)
      expect(res.data).toEqual({ got: { filters } })
      expect(res.headers.get('x-cache')).toBeNull()
    }
    expect(fake.callsTo('POST', '/market-balance')).toHaveLength(2)
  })

  it('needs only marketId', async () => {
    fake.on('POST', '/market-balance', { body: { data: [] } })
    const res = await client.post('/api/market-balance', {
      filters: { marketId: 'LSE', filteredPeriod: null },
    })
    expect(res.status).toBe(200)
    expect(fake.calls[0]?.body).toEqual({ filters: { marketId: 'LSE', filteredPeriod: null } })
  })

  it.each([
    [{}, { filters: ['The filters field is required.'] }],
    [{ filters: 'NYSE' }, { filters: ['The filters field must be an object.'] }],
    [{ filters: {} }, { 'filters.marketId': ['The filters.market id field is required.'] }],
    [{ filters: { marketId: '' } }, { 'filters.marketId': ['The filters.market id field is required.'] }],
    [
      { filters: { marketId: { a: 1 } } },
      { 'filters.marketId': ['The filters.market id field must be a string.'] },
    ],
    [
      { filters: { marketId: 'NYSE', filteredPeriod: { from: '1M' } } },
      { 'filters.filteredPeriod': ['The filters.filtered period field must be a string.'] },
    ],
  ])('answers %j with a 422, asking nothing', async (body, errors) => {
    const res = await client.post('/api/market-balance', body)
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual(errors)
    expect(fake.calls).toHaveLength(0)
  })

  it('needs a verified email', async () => {
    const { client: unverified } = await signedInClient(t, { verified: false })
    const res = await unverified.post('/api/market-balance', { filters })
    expect(res.status).toBe(403)
    expect(res.data).toEqual({ message: 'Your email address is not verified.' })
    expect(fake.calls).toHaveLength(0)
  })
})
