import { randomBytes } from 'node:crypto'
import { asc, eq } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { afterAll, beforeEach, describe, expect, it } from 'vitest'
import { type AgentAnswer, askAgent, userMessage } from '../../../../test/helpers/ai-chat.ts'
import type { TestApp } from '../../../../test/helpers/build-test-app.ts'
import type { ClientResponse, TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { upstreamEnv } from '../../../../test/helpers/proxy.ts'
import {
  appUnderTest,
  fakeModelUnderTest,
  fakeUpstreamUnderTest,
} from '../../../../test/helpers/under-test.ts'
import { aiCalls } from '../../../db/schema/index.ts'

/**
 * The AI tools read the upstream through the proxy, so they spend the caller's per-user upstream
 * allowance (PROXY_READS_PER_MINUTE) with the API's proxied reads: a spent allowance refuses the
 * tool, in words the model reads, and the tools' calls leave the API's reads over it.
 */

const model = fakeModelUnderTest()
const upstream = fakeUpstreamUnderTest()

const READS_PER_MINUTE = 5
const PAYING = { credits: 1000, verified: true }
const tag = () => randomBytes(4).toString('hex')
const stores = ['memory', ...(process.env.TEST_REDIS_URL ? ['redis'] : [])]

type Chunk = AgentAnswer['chunks'][number]
const ofType = (chunks: Chunk[], type: string) => chunks.filter((chunk) => chunk.type === type)

/** What the model was handed for each tool call of its first step, by call id. */
const toolResults = () =>
  Object.fromEntries(
    (model.requests[1]?.body.messages ?? [])
      .filter((message) => message.role === 'tool')
      .map((message) => [message.tool_call_id, JSON.parse(message.content)]),
  )

/** Laravel's 429 from the proxied route's own throttle, the limit it hit and the seconds to wait. */
function expectOverBudget(res: ClientResponse) {
  expect(res.status).toBe(429)
  expect(res.data).toEqual({ message: 'Too Many Attempts.' })
  const retryAfter = Number(res.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThan(0)
  expect(retryAfter).toBeLessThanOrEqual(60)
  expect(res.headers.get('x-ratelimit-limit')).toBe(String(READS_PER_MINUTE))
}

const callsOf = (app: TestApp, userId: number) =>
  app.database.db.select().from(aiCalls).where(eq(aiCalls.userId, userId)).orderBy(asc(aiCalls.id))

describe.each(stores)('the market tools and the per-user upstream budget (%s store)', (store) => {
  const prefix = `test:${tag()}:`
  const t = appUnderTest(() => ({
    env: {
      AI_BASE_URL: model.url,
      AI_API_KEY: 'sk-test-key',
      AI_MODEL: 'fake-gpt',
      APP_EDITION: 'pro',
      PROXY_READS_PER_MINUTE: String(READS_PER_MINUTE),
      ...upstreamEnv(upstream.url),
    },
    redis: store === 'redis' ? new Redis(process.env.TEST_REDIS_URL ?? '', { keyPrefix: prefix }) : null,
  }))
  beforeEach(() => {
    model.reset()
    upstream.reset()
  })
  afterAll(async () => {
    if (store !== 'redis') return
    // The app quit its connection; clear what the run left under its prefix.
    const cleaner = new Redis(process.env.TEST_REDIS_URL ?? '')
    const keys = await cleaner.keys(`${prefix}*`)
    if (keys.length > 0) await cleaner.del(...keys)
    await cleaner.quit()
  })

  /** Asks the trading agent; the model calls `calls` in its first step, then says `text`. */
  async function askWithTools(
    client: TestClient,
    calls: Array<{ name: string; arguments: object }>,
    text = `Answered ${tag()}.`,
  ) {
    const toolCalls = calls.map((call) => ({ ...call, id: `call_${tag()}` }))
    model.reply({ toolCalls }, { text })
    const answer = await askAgent(client, 'trading', [userMessage('How are the markets?')])
    expect(answer.text).toBe(text)
    expect(answer.chunks.at(-1)?.type).toBe('finish')
    expect(ofType(answer.chunks, 'error')).toEqual([])
    return { answer, ids: toolCalls.map((call) => call.id) }
  }

  it('refuses a market tool to a user who spent the budget on proxied reads: a result the model reads, and the answer goes on', async () => {
    const { client, user } = await signedInClient(t, PAYING)
    // Cached or not, every read counts: the same market list five times.
    for (let i = 0; i < READS_PER_MINUTE; i++) expect((await client.get('/api/markets')).status).toBe(200)
    const upstreamCalls = upstream.calls.length

    const { answer, ids } = await askWithTools(client, [
      { name: 'get_markets', arguments: {} },
      { name: 'get_ticker', arguments: { symbol: 'BTC-USD' } },
    ])
    const [markets, ticker] = ids as [string, string]
    const results = toolResults()
    for (const id of [markets, ticker]) {
      const result = results[id]
      expect(Object.keys(result).sort()).toEqual(['error', 'retry_after'])
      expect(result.retry_after).toBeGreaterThan(0)
      expect(result.retry_after).toBeLessThanOrEqual(60)
      expect(result.error).toBe(
        `The market data budget is spent for now: retry after ${result.retry_after} seconds.`,
      )
      // The client's stream shows the same result.
      expect(ofType(answer.chunks, 'tool-output-available')).toContainEqual({
        type: 'tool-output-available',
        toolCallId: id,
        output: result,
      })
    }
    // Nothing reached the upstream for them.
    expect(upstream.calls.length).toBe(upstreamCalls)
    const [row] = await callsOf(t, user.id)
    expect(row).toMatchObject({ status: 'completed', steps: 2 })
    expect(row?.toolCalls.map((call) => call.name).sort()).toEqual(['get_markets', 'get_ticker'])
  })

  it("spends the budget with the tools' calls, so the next proxied read gets the proxy's 429", async () => {
    const { client } = await signedInClient(t, PAYING)
    const { ids } = await askWithTools(client, [
      { name: 'get_markets', arguments: {} },
      { name: 'get_tickers', arguments: { market_id: 'US' } },
      { name: 'get_ticker', arguments: { symbol: 'BTC-USD' } },
      { name: 'get_sector', arguments: { sector: 'Technology' } },
      { name: 'get_market_balance', arguments: { filters: { marketId: 'US' } } },
    ])
    // All five were answered: within the budget, each spent one read.
    const results = toolResults()
    for (const id of ids) expect(JSON.stringify(results[id])).not.toContain('"error"')
    expect(results[ids[0] as string]).toEqual(expect.arrayContaining([expect.objectContaining({ id: 'US' })]))

    const calls = upstream.calls.length
    expectOverBudget(await client.get('/api/markets'))
    expectOverBudget(await client.get('/api/tickers?market_id=US'))
    expectOverBudget(await client.post('/api/market-balance', { filters: { marketId: 'US' } }))
    expect(upstream.calls.length).toBe(calls)

    // Another user's budget is their own.
    const other = await signedInClient(t, PAYING)
    expect((await other.client.get('/api/markets')).status).toBe(200)
    // A minute later the reads go through again.
    if (store === 'memory') {
      t.clock.advance(61_000)
      expect((await client.get('/api/markets')).status).toBe(200)
    }
  })
})
