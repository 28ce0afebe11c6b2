import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { TestClient } from '../helpers/client.ts'
import { signedInClient } from '../helpers/factories.ts'
import { upstreamEnv } from '../helpers/proxy.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../helpers/under-test.ts'

/**
 * Path parameters as long as their schemas allow (191 characters: upstream ids and symbols) reach
 * the handler; longer ones name no route. Fastify's router alone would stop at 100.
 */

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({ env: upstreamEnv(fake.url) }))
let client: TestClient
beforeAll(async () => {
  ;({ client } = await signedInClient(t, { verified: true }))
})
beforeEach(() => {
  fake.reset()
  fake.on('GET', /.*/, (call) => ({ body: { data: { path: call.path } } }))
})

describe('path parameters up to 191 characters', () => {
  it.each([
    ['a market id', '/api/markets/', '/markets/'],
    ['a news id', '/api/news/', '/news/'],
    ['a strategy id', '/api/strategies/', '/strategies/'],
  ])('%s of 191 characters reaches the upstream', async (_label, api, upstream) => {
    const id = 'm'.repeat(191)
    const res = await client.get(`${api}${id}`)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ path: `${upstream}${id}` })
  })

  it('counts a percent-encoded character once, as decoded: a 191-character symbol holding slashes', async () => {
    const symbol = `${'AB/'.repeat(63)}XY` // 191 characters once decoded, 317 as sent
    const res = await client.get(`/api/tickers/${encodeURIComponent(symbol)}`)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ path: `/tickers/${encodeURIComponent(symbol)}` })
  })

  it.each([192, 1000, 5000])(
    'answers 404 to one of %i characters, asking the upstream nothing',
    async (length) => {
      const res = await client.get(`/api/markets/${'m'.repeat(length)}`)
      expect(res.status).toBe(404)
      expect(res.data.message).toMatch(/^The route api\/markets\/m+(\.\.\.)? could not be found\.$/)
      expect(fake.calls).toEqual([])
    },
  )
})
