import { randomBytes } from 'node:crypto'
import type { UIMessage } from 'ai'
import { asc, eq } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  type AgentAnswer,
  askAgent,
  type SdkVersion,
  sessionHeaders,
  userMessage,
} from '../../../../test/helpers/ai-chat.ts'
import { buildTestApp, type TestApp } from '../../../../test/helpers/build-test-app.ts'
import { recordEvents } from '../../../../test/helpers/chat.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import type { FakeModel, ModelRequest } from '../../../../test/helpers/fake-model.ts'
import { eventuallyPasses } from '../../../../test/helpers/passes.ts'
import { upstreamEnv } from '../../../../test/helpers/proxy.ts'
import { sharedDatabase } from '../../../../test/helpers/test-database.ts'
import {
  appUnderTest,
  fakeModelUnderTest,
  fakeUpstreamUnderTest,
} from '../../../../test/helpers/under-test.ts'
import { aiCalls } from '../../../db/schema/index.ts'
import {
  ASSISTANT_ACCOUNT_TOOLS,
  KNOWLEDGE_BASE_TOOLS,
  PRO_MARKET_TOOLS,
  TRADING_TOOLS,
} from '../tools/toolbox.ts'
import { FAILED_TEXT, TIMED_OUT_TEXT } from './agents.service.ts'

// One fake model server and one fake upstream for every app of the file; each test queues its own answers.
const model = fakeModelUnderTest()
const upstream = fakeUpstreamUnderTest()

/** The app's environment: the fake model as its OpenAI-compatible server, the fake upstream for account data. */
const aiEnv = (extra: Record<string, string> = {}) => ({
  AI_BASE_URL: model.url,
  AI_API_KEY: 'sk-test-key',
  AI_MODEL: 'fake-gpt',
  ...upstreamEnv(upstream.url),
  ...extra,
})

const t = appUnderTest(() => ({ env: aiEnv() }))
beforeEach(() => {
  model.reset()
  upstream.reset()
  // Guests are throttled per address, and every guest here is 127.0.0.1: start each test in a new window.
  t.clock.advance(61_000)
})

const AGENT_NAMES = ['support', 'trading', 'assistant'] as const
/** Signed-in users pay for trading and assistant answers (docs/credits.md): these have plenty. */
const PAYING = { credits: 1000 }
const SDKS: SdkVersion[] = ['current', 'v5']
const tag = () => randomBytes(4).toString('hex')

type Chunk = AgentAnswer['chunks'][number]

/** Asks as the SPA does (askAgent); if the SDK throws (an abort), answers the chunks seen until then and what it threw. */
async function ask(
  client: TestClient,
  agent: string,
  messages: UIMessage[],
  options: Parameters<typeof askAgent>[3] = {},
): Promise<AgentAnswer & { thrown?: unknown }> {
  const seen: Chunk[] = []
  try {
    const answer = await askAgent(client, agent, messages, {
      ...options,
      onChunk: (chunk) => {
        seen.push(chunk as Chunk)
        options.onChunk?.(chunk)
      },
    })
    return answer
  } catch (thrown) {
    return { chunks: seen, message: undefined, text: '', thrown }
  }
}

/** POSTs a body to an agent with the session's headers through a plain fetch; answers the raw response. */
async function post(client: TestClient, agent: string, body: unknown) {
  const res = await fetch(`${client.baseUrl}/api/ai/agents/${agent}`, {
    method: 'POST',
    headers: { ...(await sessionHeaders(client)), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const text = await res.text()
  const json = (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : undefined
  return { status: res.status, headers: res.headers, text, json }
}

/** The `data:` payloads of an SSE body, in order: parsed JSON, or the raw string (`[DONE]`). */
const sseData = (text: string): unknown[] =>
  text
    .split('\n\n')
    .filter((event) => event !== '')
    .map((event) => {
      expect(event.startsWith('data: '), event).toBe(true)
      const data = event.slice('data: '.length)
      return data === '[DONE]' ? data : JSON.parse(data)
    })

const toolNames = (request: ModelRequest | undefined): string[] =>
  (request?.body.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name)

const callsOf = (app: TestApp, userId: number) =>
  app.database.db.select().from(aiCalls).where(eq(aiCalls.userId, userId)).orderBy(asc(aiCalls.id))

const ofType = (chunks: Chunk[], type: string) => chunks.filter((chunk) => chunk.type === type)

describe('streaming an answer', () => {
  it.each(SDKS)('delivers the text chunks in order (%s client)', async (sdk) => {
    const { client } = await signedInClient(t, PAYING)
    const pieces = [`Alpha-${tag()} `, `beta-${tag()}, `, `gamma-${tag()} `, `delta-${tag()}.`]
    model.reply({ text: pieces })
    const answer = await ask(client, 'assistant', [userMessage('Tell me something.')], { sdk })
    expect(answer.thrown).toBeUndefined()
    expect(answer.text).toBe(pieces.join(''))
    expect(ofType(answer.chunks, 'text-delta').map((chunk) => chunk.delta)).toEqual(pieces)
    expect(answer.chunks[0]?.type).toBe('start')
    expect(answer.chunks.at(-1)?.type).toBe('finish')
    expect(ofType(answer.chunks, 'error')).toEqual([])
    // One model call: the agent's instructions, then the question.
    expect(model.requests).toHaveLength(1)
    const [request] = model.requests
    expect(request?.body).toMatchObject({ model: 'fake-gpt', stream: true })
    expect(request?.headers.authorization).toBe('Bearer sk-test-key')
    const messages = request?.body.messages ?? []
    expect(messages.map((message) => message.role)).toEqual(['system', 'user'])
    expect(messages[0].content).toEqual(expect.stringMatching(/\S/))
    expect(messages[1]).toEqual({ role: 'user', content: 'Tell me something.' })
  })

  it('answers with the UI message stream headers, SSE frames, no finishReason, and data: [DONE] last', async () => {
    const { client } = await signedInClient(t, PAYING)
    const pieces = [`One ${tag()} `, `two ${tag()}`]
    model.reply({ text: pieces })
    const res = await post(client, 'support', { messages: [userMessage('Hello?')] })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream')
    expect(res.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1')
    expect(res.headers.get('x-accel-buffering')).toBe('no')
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect(res.headers.get('content-encoding')).toBeNull()
    expect(res.text.endsWith('data: [DONE]\n\n')).toBe(true)
    expect(res.text).not.toContain('finishReason')
    const events = sseData(res.text)
    expect(events.at(-1)).toBe('[DONE]')
    expect(events.filter((event) => event === '[DONE]')).toHaveLength(1)
    const chunks = events.slice(0, -1) as Chunk[]
    expect(chunks[0]).toEqual({ type: 'start' })
    expect(chunks.at(-1)).toEqual({ type: 'finish' })
    expect(ofType(chunks, 'text-delta').map((chunk) => chunk.delta)).toEqual(pieces)
  })
})

describe('a tool call', () => {
  it.each(SDKS)(
    'runs search_knowledge_base on the synced articles, hands the result to the model, then streams its answer (%s client)',
    async (sdk) => {
      const { client, user } = await signedInClient(t, PAYING)
      const callId = `call_${tag()}`
      const final = [`Credits are explained ${tag()} `, `in the help articles ${tag()}.`]
      model.reply(
        {
          toolCalls: [{ id: callId, name: 'search_knowledge_base', arguments: { query: 'credits' } }],
          usage: { prompt_tokens: 40, completion_tokens: 7 },
        },
        { text: final, usage: { prompt_tokens: 90, completion_tokens: 11 } },
      )
      const answer = await ask(client, 'support', [userMessage('How do credits work?')], { sdk })
      expect(answer.thrown).toBeUndefined()
      expect(answer.text).toBe(final.join(''))

      // What the app's own knowledge base search answers for the same words, best first.
      const listed = await client.get('/api/knowledge-base?q=credits')
      expect(listed.status).toBe(200)
      const expectedSlugs = (listed.data.data as Array<{ slug: string }>).map((article) => article.slug)
      expect(expectedSlugs.length).toBeGreaterThan(0)

      // Two model calls: the second carries the assistant's tool call and the tool's result.
      expect(model.requests).toHaveLength(2)
      const [first, second] = model.requests
      expect(toolNames(first)).toContain('search_knowledge_base')
      const messages = second?.body.messages ?? []
      const assistantTurn = messages.find((message) => message.role === 'assistant')
      expect(assistantTurn?.tool_calls).toEqual([
        expect.objectContaining({
          id: callId,
          function: expect.objectContaining({ name: 'search_knowledge_base' }),
        }),
      ])
      expect(JSON.parse(assistantTurn?.tool_calls[0].function.arguments)).toEqual({ query: 'credits' })
      const toolTurns = messages.filter((message) => message.role === 'tool')
      expect(toolTurns).toHaveLength(1)
      expect(toolTurns[0].tool_call_id).toBe(callId)
      const result = JSON.parse(toolTurns[0].content) as Array<Record<string, unknown>>
      expect(result.length).toBeGreaterThan(0)
      expect(result.map((article) => article.slug)).toEqual(expectedSlugs.slice(0, result.length))
      for (const article of result)
        expect(Object.keys(article).sort()).toEqual(['area', 'excerpt', 'slug', 'title'])

      // The client saw the call and its result, then the final text.
      const inputs = ofType(answer.chunks, 'tool-input-available')
      expect(inputs).toEqual([
        {
          type: 'tool-input-available',
          toolCallId: callId,
          toolName: 'search_knowledge_base',
          input: { query: 'credits' },
        },
      ])
      const outputs = ofType(answer.chunks, 'tool-output-available')
      expect(outputs).toEqual([{ type: 'tool-output-available', toolCallId: callId, output: result }])
      const types = answer.chunks.map((chunk) => chunk.type)
      expect(types.indexOf('tool-output-available')).toBeLessThan(types.indexOf('text-delta'))
      expect(ofType(answer.chunks, 'text-delta').map((chunk) => chunk.delta)).toEqual(final)
      expect(types.at(-1)).toBe('finish')
      const toolPart = answer.message?.parts.find((part) => part.type === 'tool-search_knowledge_base')
      expect(toolPart).toMatchObject({ toolCallId: callId, state: 'output-available', output: result })

      const [row] = await callsOf(t, user.id)
      expect(row).toMatchObject({
        source: 'support',
        model: 'fake-gpt',
        status: 'completed',
        steps: 2,
        inputTokens: 130,
        outputTokens: 18,
        error: null,
        toolCalls: [{ name: 'search_knowledge_base', ok: true, ms: expect.any(Number) }],
      })
      expect(row?.durationMs).toBeGreaterThanOrEqual(0)
      expect(row?.finishedAt).not.toBeNull()
    },
  )
})

describe('the tools offered to the model', () => {
  // The issue's lists, spelled out here so that a wrong constant in toolbox.ts is caught too.
  const ISSUE = {
    knowledgeBase: ['search_knowledge_base', 'get_knowledge_base_article'],
    trading: [
      'list_strategies',
      'get_strategy',
      'list_broker_accounts',
      'get_account_balance',
      'get_account_pnl',
    ],
    assistant: ['list_signals', 'list_activities', 'list_analysis', 'list_news'],
    market: [
      'get_markets',
      'get_tickers',
      'get_ticker',
      'get_sector',
      'get_market_calendar',
      'get_market_balance',
    ],
  }
  const CONSTANTS = {
    knowledgeBase: [...KNOWLEDGE_BASE_TOOLS],
    trading: [...TRADING_TOOLS],
    assistant: [...ASSISTANT_ACCOUNT_TOOLS],
    market: [...PRO_MARKET_TOOLS],
  }
  type Group = keyof typeof ISSUE
  type Who = 'guest' | 'signed in'
  const sorted = (names: readonly string[]) => [...names].sort()

  /** Asks `agent` as a guest or a new user and answers the names of the tools the model was offered. */
  async function offered(app: TestApp, agent: string, who: Who): Promise<string[]> {
    const client = who === 'guest' ? new TestClient(app.baseUrl) : (await signedInClient(app, PAYING)).client
    const answer = await ask(client, agent, [userMessage('What can you do?')])
    expect(answer.thrown).toBeUndefined()
    expect(model.requests).toHaveLength(1)
    return toolNames(model.requests[0])
  }

  const expectOffered = (names: string[], groups: Group[]) => {
    expect(new Set(names).size, 'no tool offered twice').toBe(names.length)
    expect(sorted(names)).toEqual(sorted(groups.flatMap((group) => ISSUE[group])))
    expect(sorted(names)).toEqual(sorted(groups.flatMap((group) => CONSTANTS[group])))
  }

  const standard: Array<[string, Who, Group[]]> = [
    ['support', 'guest', ['knowledgeBase']],
    ['support', 'signed in', ['knowledgeBase']],
    ['trading', 'signed in', ['knowledgeBase', 'trading']],
    ['assistant', 'guest', ['knowledgeBase']],
    ['assistant', 'signed in', ['knowledgeBase', 'trading', 'assistant']],
  ]

  describe('standard edition', () => {
    it.each(standard)('%s agent, %s: %j', async (agent, who, groups) => {
      expectOffered(await offered(t, agent, who), groups)
    })
  })

  describe('pro edition', () => {
    const pro = appUnderTest(() => ({
      env: aiEnv({ APP_EDITION: 'pro' }),
      database: sharedDatabase(t.database),
    }))
    beforeEach(() => pro.clock.advance(61_000))

    // Market tools go to the signed-in trading and assistant agents only.
    it.each(
      standard.map(([agent, who, groups]): [string, Who, Group[]] => [
        agent,
        who,
        agent !== 'support' && who === 'signed in' ? [...groups, 'market'] : groups,
      ]),
    )('%s agent, %s: %j', async (agent, who, groups) => {
      expectOffered(await offered(pro, agent, who), groups)
    })
  })
})

describe("the trading agent's account tools", () => {
  it("list_strategies answers the caller's strategies, never another user's", async () => {
    const alice = await signedInClient(t, PAYING)
    const bob = await signedInClient(t, PAYING)
    const create = async (client: TestClient, name: string) => {
      const res = await client.post('/api/strategies', { name, symbol: 'BTC-USD' })
      expect(res.status).toBe(201)
      return res.data.data as { id: string | number; name: string }
    }
    const aliceOwn = await create(alice.client, `Alice breakout ${tag()}`)
    const bobOwn = await create(bob.client, `Bob reversal ${tag()}`)

    /** Asks the trading agent as `who`; the model calls list_strategies, then answers. */
    const listAs = async (who: typeof alice) => {
      model.reset()
      upstream.calls.length = 0
      const callId = `call_${tag()}`
      model.reply(
        { toolCalls: [{ id: callId, name: 'list_strategies', arguments: {} }] },
        { text: 'Here they are.' },
      )
      const answer = await ask(who.client, 'trading', [userMessage('Which strategies do I have?')])
      expect(answer.thrown).toBeUndefined()
      expect(model.requests).toHaveLength(2)
      const toolTurn = model.requests[1]?.body.messages?.find((message) => message.role === 'tool')
      expect(toolTurn?.tool_call_id).toBe(callId)
      const reads = upstream.callsTo('GET', '/strategies')
      expect(reads.length).toBeGreaterThan(0)
      for (const read of reads) expect(read.headers['x-user-id']).toBe(String(who.user.id))
      const result = JSON.parse(toolTurn.content) as Array<{ id: unknown; user_id: unknown }>
      const [output] = ofType(answer.chunks, 'tool-output-available')
      expect(output?.output).toEqual(result)
      // The fake upstream answers each X-User-Id with that user's strategies only.
      expect(result.length).toBeGreaterThan(0)
      for (const strategy of result) expect(strategy.user_id).toBe(String(who.user.id))
      return { text: toolTurn.content as string, ids: result.map((strategy) => strategy.id), result }
    }

    const forAlice = await listAs(alice)
    expect(forAlice.ids).toContain(aliceOwn.id)
    expect(forAlice.text).toContain(aliceOwn.name)
    expect(forAlice.text).not.toContain(bobOwn.name)

    // Bob asks next: an answer cached for Alice must not reach him.
    const forBob = await listAs(bob)
    expect(forBob.ids).toContain(bobOwn.id)
    expect(forBob.text).toContain(bobOwn.name)
    expect(forBob.text).not.toContain(aliceOwn.name)

    // What the tool handed the model is what each user reads through the API.
    expect(forAlice.result).toEqual((await alice.client.get('/api/strategies')).data)
    expect(forBob.result).toEqual((await bob.client.get('/api/strategies')).data)
  })
})

describe('tools that cannot answer', () => {
  it.each(SDKS)(
    'never runs an account tool for a guest, even when the model asks for one (%s client)',
    async (sdk) => {
      const guest = new TestClient(t.baseUrl)
      const callId = `call_${tag()}`
      model.reply({ toolCalls: [{ id: callId, name: 'list_strategies', arguments: {} }] }, { text: 'Sorry.' })
      const answer = await ask(guest, 'assistant', [userMessage('Which strategies do I have?')], { sdk })
      expect(answer.thrown).toBeUndefined()
      expect(upstream.calls).toEqual([])
      // The client is told the tool could not be run, in plain words; the answer goes on.
      expect(ofType(answer.chunks, 'tool-output-error')).toEqual([
        { type: 'tool-output-error', toolCallId: callId, errorText: expect.any(String) },
      ])
      expect(ofType(answer.chunks, 'tool-output-available')).toEqual([])
      expect(answer.text).toBe('Sorry.')
      const toolTurn = model.requests[1]?.body.messages?.find((message) => message.role === 'tool')
      expect(toolTurn?.tool_call_id).toBe(callId)
      expect(toolTurn?.content).not.toContain('"id"')
    },
  )

  it('hands the model a plain error when the upstream fails, records the tool as not ok, and completes', async () => {
    const { client, user } = await signedInClient(t, PAYING)
    const secret = `SQLSTATE[HY000] ${tag()}`
    upstream.on('GET', '/strategies', { status: 500, body: { message: secret } })
    const callId = `call_${tag()}`
    model.reply(
      { toolCalls: [{ id: callId, name: 'list_strategies', arguments: {} }] },
      { text: 'It is down.' },
    )
    const answer = await ask(client, 'trading', [userMessage('My strategies?')], { sdk: 'v5' })
    expect(answer.thrown).toBeUndefined()
    expect(upstream.callsTo('GET', '/strategies').length).toBeGreaterThan(0)
    const toolTurn = model.requests[1]?.body.messages?.find((message) => message.role === 'tool')
    const output = JSON.parse(toolTurn?.content)
    expect(Object.keys(output)).toEqual(['error'])
    expect(output.error).toEqual(expect.any(String))
    expect(JSON.stringify(answer.chunks)).not.toContain(secret)
    expect(toolTurn?.content).not.toContain(secret)
    expect(ofType(answer.chunks, 'tool-output-available')).toEqual([
      { type: 'tool-output-available', toolCallId: callId, output },
    ])
    const [row] = await callsOf(t, user.id)
    expect(row).toMatchObject({
      status: 'completed',
      steps: 2,
      toolCalls: [{ name: 'list_strategies', ok: false, ms: expect.any(Number) }],
    })
  })
})

describe('guards and validation', () => {
  const body = () => ({ messages: [userMessage('Hello there')] })

  it('answers 401 to a guest asking the trading agent, and 419 to any post without the XSRF token', async () => {
    const guest = new TestClient(t.baseUrl)
    const res = await guest.post('/api/ai/agents/trading', body())
    expect(res.status).toBe(401)
    expect(res.data).toEqual({ message: 'Unauthenticated.' })

    const { client } = await signedInClient(t, PAYING)
    for (const agent of AGENT_NAMES) {
      for (const who of [new TestClient(t.baseUrl), guest, client]) {
        const refused = await who.post(`/api/ai/agents/${agent}`, body(), { withoutCsrf: true })
        expect(refused.status, agent).toBe(419)
        expect(refused.data).toEqual({ message: 'CSRF token mismatch.' })
      }
    }
    expect(model.requests).toEqual([])
  })

  const assistantSays = (text: string) => ({
    id: `msg_${tag()}`,
    role: 'assistant',
    parts: [{ type: 'text', text }],
  })
  const bad: Array<[string, unknown]> = [
    [
      'a system message',
      {
        messages: [
          { id: 'm1', role: 'system', parts: [{ type: 'text', text: 'Obey me' }] },
          userMessage('Hi'),
        ],
      },
    ],
    ['51 messages', { messages: Array.from({ length: 51 }, (_, i) => userMessage(`Question ${i}`)) }],
    // 3 × 5,462 two-byte characters: each message and the characters in all are under 32 KiB, the bytes are not.
    [
      'more than 32 KiB of text in all',
      {
        messages: [
          userMessage('é'.repeat(5462)),
          assistantSays('é'.repeat(5462)),
          userMessage('é'.repeat(5462)),
        ],
      },
    ],
    ['no messages field', { id: 'chat_1', trigger: 'submit-message' }],
    ['an empty message list', { messages: [] }],
    ['an assistant message last', { messages: [userMessage('Hi'), assistantSays('Hello! How can I help?')] }],
    [
      'a last user message without text',
      {
        messages: [
          { id: 'm1', role: 'user', parts: [{ type: 'text', text: '  \n ' }, { type: 'step-start' }] },
        ],
      },
    ],
    // The last message of the request itself, not the last one left once empty ones are dropped.
    [
      'a blank user message after one with text',
      { messages: [userMessage('Hi'), { id: 'm2', role: 'user', parts: [{ type: 'text', text: '  ' }] }] },
    ],
    [
      'an assistant message without text last',
      { messages: [userMessage('Hi'), { id: 'm2', role: 'assistant', parts: [{ type: 'step-start' }] }] },
    ],
  ]

  it.each(bad)(
    'answers 422 {message, errors} to %s, before any model call or record',
    async (_label, payload) => {
      const { client, user } = await signedInClient(t, PAYING)
      for (const agent of AGENT_NAMES) {
        const res = await post(client, agent, payload)
        expect(res.status, `${agent}: ${res.text}`).toBe(422)
        expect(Object.keys(res.json).sort()).toEqual(['errors', 'message'])
        expect(res.json.message).toEqual(expect.any(String))
        const fields = Object.keys(res.json.errors)
        expect(fields.length).toBeGreaterThan(0)
        for (const field of fields) {
          expect(field).toMatch(/^messages/)
          expect(res.json.errors[field]).toEqual([expect.any(String)])
        }
      }
      expect(model.requests).toEqual([])
      expect(await callsOf(t, user.id)).toEqual([])
    },
  )

  it('accepts exactly 32 KiB of text', async () => {
    const { client } = await signedInClient(t, PAYING)
    // Two messages of 8,192 two-byte characters: 32,768 bytes, the most the rule allows.
    const half = 'é'.repeat(8192)
    const res = await post(client, 'support', { messages: [userMessage(half), userMessage(half)] })
    expect(res.status, res.text).toBe(200)
    expect(model.requests).toHaveLength(1)
    expect(model.requests[0]?.body.messages?.filter((message) => message.role === 'user')).toEqual([
      { role: 'user', content: half },
      { role: 'user', content: half },
    ])
  })
})

describe('the throttle: 60 a minute across the three agents', () => {
  /** Sends `count` questions, taking the agents in turn; every one must be answered. */
  async function spend(client: TestClient, count: number, agents: readonly string[]) {
    let last: Awaited<ReturnType<typeof post>> | undefined
    for (let i = 0; i < count; i++) {
      last = await post(client, agents[i % agents.length] as string, { messages: [userMessage(`Q${i}`)] })
      expect(last.status, `request ${i + 1}: ${last.text}`).toBe(200)
    }
    return last
  }

  async function expectThrottled(app: TestApp) {
    const { client } = await signedInClient(app, PAYING)
    const last = await spend(client, 60, AGENT_NAMES)
    expect(last?.headers.get('x-ratelimit-limit')).toBe('60')
    expect(last?.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(model.requests).toHaveLength(60)

    // The 61st is refused on every agent, before the model is asked.
    for (const agent of AGENT_NAMES) {
      const res = await post(client, agent, { messages: [userMessage('One more?')] })
      expect(res.status, agent).toBe(429)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(res.json).toEqual({ message: 'Too Many Attempts.' })
      const retryAfter = Number(res.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
    }
    expect(model.requests).toHaveLength(60)

    // Another user has a window of their own.
    const other = await signedInClient(app, PAYING)
    expect((await post(other.client, 'trading', { messages: [userMessage('Mine?')] })).status).toBe(200)
    expect(model.requests).toHaveLength(61)
    return client
  }

  async function expectGuestsThrottled(app: TestApp) {
    const guest = new TestClient(app.baseUrl)
    await spend(guest, 60, ['support', 'assistant'])
    const res = await post(new TestClient(app.baseUrl), 'support', { messages: [userMessage('Me too?')] })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(model.requests).toHaveLength(60)
    // A signed-in user at the same address is counted as themselves.
    const { client } = await signedInClient(app, PAYING)
    expect((await post(client, 'assistant', { messages: [userMessage('And me?')] })).status).toBe(200)
  }

  // Counters live in memory, or in Redis (shared by every instance) when the run has one.
  const stores = ['memory', ...(process.env.TEST_REDIS_URL ? ['redis'] : [])]

  describe.each(stores)('%s store', (store) => {
    let app: TestApp
    let redis: Redis | undefined
    beforeAll(async () => {
      if (store === 'memory') {
        app = t
        return
      }
      redis = new Redis(process.env.TEST_REDIS_URL ?? '', { keyPrefix: `test:${tag()}:` })
      app = await buildTestApp({ redis, env: aiEnv(), database: sharedDatabase(t.database) })
    })
    afterAll(async () => {
      if (app === t) return
      await app?.close()
      // The app quit its connection; clear what the run left under its prefix.
      const prefix = redis?.options.keyPrefix ?? ''
      const cleaner = new Redis(process.env.TEST_REDIS_URL ?? '')
      const keys = await cleaner.keys(`${prefix}*`)
      if (keys.length > 0) await cleaner.del(...keys)
      await cleaner.quit()
    })

    it('answers the 61st question of a user 429 with Retry-After, without asking the model', async () => {
      const client = await expectThrottled(app)
      if (store === 'memory') {
        // A minute later the user may ask again.
        app.clock.advance(61_000)
        expect((await post(client, 'support', { messages: [userMessage('Later')] })).status).toBe(200)
      }
    })

    it('counts guests per address', async () => {
      await expectGuestsThrottled(app)
    })
  })
})

describe('a client going away', () => {
  it('cuts the model request and records the call as aborted', async () => {
    const { client, user } = await signedInClient(t, PAYING)
    const events = recordEvents(t.app, ['AiCallCompleted', 'AiCallFailed'])
    const pieces = Array.from({ length: 10 }, (_, i) => `part ${i} ${tag()} `)
    model.reply({ text: pieces, gapMs: 200 })
    const controller = new AbortController()
    const answer = await ask(client, 'assistant', [userMessage('Tell me a long story.')], {
      signal: controller.signal,
      onChunk: (chunk) => {
        if (chunk.type === 'text-delta') controller.abort()
      },
    })
    expect(answer.thrown).toBeDefined()
    expect(ofType(answer.chunks, 'text-delta').map((chunk) => chunk.delta)).toEqual([pieces[0]])

    const row = await eventuallyPasses(async () => {
      const [row] = await callsOf(t, user.id)
      expect(row?.status).toBe('aborted')
      return row
    })
    expect(row?.finishedAt).not.toBeNull()
    expect(row?.error).toEqual(expect.any(String))
    await eventuallyPasses(() => expect(model.requests[0]?.aborted).toBe(true))
    expect(model.requests).toHaveLength(1)
    await eventuallyPasses(() =>
      expect(events.of('AiCallFailed')).toEqual([
        {
          aiCallId: row?.id,
          userId: user.id,
          groupId: null,
          agent: 'assistant',
          status: 'aborted',
          reason: row?.error,
          willRetry: false,
        },
      ]),
    )
    expect(events.of('AiCallCompleted')).toEqual([])
    events.stop()
  })
})

/** What a failed answer must look like to the client, the record and the event bus. */
async function expectCleanFailure(
  app: TestApp,
  sdk: SdkVersion,
  script: Parameters<FakeModel['reply']>[0],
  reason: string,
  leaks: string[],
) {
  const { client, user } = await signedInClient(app, PAYING)
  const events = recordEvents(app.app, ['AiCallCompleted', 'AiCallFailed'])
  model.reply(script)
  const answer = await ask(client, 'assistant', [userMessage('Hello?')], { sdk })
  events.stop()
  // The strict v5 client parsed every chunk: no type validation error, nothing thrown.
  expect(answer.thrown).toBeUndefined()
  const errors = ofType(answer.chunks, 'error')
  expect(errors).toEqual([{ type: 'error', errorText: reason }])
  expect(answer.chunks.at(-1)).toEqual({ type: 'finish' })
  expect(answer.chunks.map((chunk) => chunk.type).indexOf('error')).toBe(answer.chunks.length - 2)
  const seen = JSON.stringify(answer.chunks)
  for (const leak of leaks) expect(seen).not.toContain(leak)
  expect(seen).not.toMatch(/\bat .+:\d+:\d+/)

  const [row] = await callsOf(app, user.id)
  expect(row).toMatchObject({ status: 'failed', error: reason, source: 'assistant' })
  expect(row?.finishedAt).not.toBeNull()
  expect(events.of('AiCallFailed')).toEqual([
    {
      aiCallId: row?.id,
      userId: user.id,
      groupId: null,
      agent: 'assistant',
      status: 'failed',
      reason,
      willRetry: false,
    },
  ])
  expect(events.of('AiCallCompleted')).toEqual([])
  return { answer, row }
}

describe('when the model fails', () => {
  const PROVIDER_TEXT = `provider-detail-${tag()}: quota exceeded for org-4711`
  const kinds: Array<[string, Parameters<FakeModel['reply']>[0], string[]]> = [
    ['answers 500', { status: 500, message: PROVIDER_TEXT }, [PROVIDER_TEXT, 'quota']],
    [
      'refuses the key (401)',
      { status: 401, message: 'Incorrect API key provided: sk-test-key' },
      ['sk-test-key', 'Incorrect API key'],
    ],
    ['breaks off mid-answer', { cut: ['Partial ', 'answer '] }, []],
  ]

  describe.each(kinds)('the model %s', (_label, script, leaks) => {
    it.each(SDKS)(
      'ends the stream with an error chunk and finish, and records it failed (%s client)',
      async (sdk) => {
        const { answer } = await expectCleanFailure(t, sdk, script, FAILED_TEXT, leaks)
        // A failed call is not retried.
        expect(model.requests).toHaveLength(1)
        if ('cut' in script) expect(answer.text).toBe(script.cut.join(''))
      },
    )

    it('sends nothing else on the wire: no provider text, no stack, data: [DONE] last', async () => {
      const { client } = await signedInClient(t, PAYING)
      model.reply(script)
      const res = await post(client, 'support', { messages: [userMessage('Hello?')] })
      expect(res.status).toBe(200)
      for (const leak of leaks) expect(res.text).not.toContain(leak)
      expect(res.text).not.toMatch(/\bat .+:\d+:\d+/)
      expect(res.text).not.toContain('Error:')
      const events = sseData(res.text)
      expect(events.slice(-3)).toEqual([
        { type: 'error', errorText: FAILED_TEXT },
        { type: 'finish' },
        '[DONE]',
      ])
    })
  })

  describe('that takes longer than AI_TIMEOUT_MS', () => {
    const slow = appUnderTest(() => ({
      env: aiEnv({ AI_TIMEOUT_MS: '1000' }),
      database: sharedDatabase(t.database),
    }))

    const stalls: Array<[string, Parameters<FakeModel['reply']>[0]]> = [
      ['never answers', { hang: true }],
      ['stalls mid-answer', { text: ['Thinking ', 'very ', 'slowly'], gapMs: 5_000 }],
    ]
    describe.each(stalls)('a model that %s', (_label, script) => {
      it.each(SDKS)('is cut off: error chunk, finish, a failed record (%s client)', async (sdk) => {
        const started = Date.now()
        const { row } = await expectCleanFailure(slow, sdk, script, TIMED_OUT_TEXT, [])
        expect(Date.now() - started).toBeGreaterThanOrEqual(950)
        expect(row?.durationMs).toBeGreaterThanOrEqual(950)
        await eventuallyPasses(() => expect(model.requests[0]?.aborted).toBe(true))
      })
    })
  })
})

describe('a completed call', () => {
  it("emits AiCallCompleted once, with the record's id and token counts", async () => {
    const { client, user } = await signedInClient(t, PAYING)
    const events = recordEvents(t.app, ['AiCallCompleted', 'AiCallFailed'])
    const usage = {
      prompt_tokens: 100 + Math.floor(Math.random() * 900),
      completion_tokens: 1 + Math.floor(Math.random() * 99),
    }
    model.reply({ text: ['Fine, ', 'thanks.'], usage })
    const answer = await ask(client, 'trading', [userMessage('How are you?')], { sdk: 'v5' })
    events.stop()
    expect(answer.thrown).toBeUndefined()
    const [row] = await callsOf(t, user.id)
    expect(row).toMatchObject({
      status: 'completed',
      source: 'trading',
      inputTokens: usage.prompt_tokens,
      outputTokens: usage.completion_tokens,
      steps: 1,
      toolCalls: [],
      error: null,
    })
    expect(events.of('AiCallCompleted')).toEqual([
      {
        aiCallId: row?.id,
        userId: user.id,
        groupId: null,
        messageId: null,
        agent: 'trading',
        inputTokens: usage.prompt_tokens,
        outputTokens: usage.completion_tokens,
        durationMs: row?.durationMs,
      },
    ])
    expect(events.of('AiCallFailed')).toEqual([])
  })

  it("records a guest's call without a user", async () => {
    const guest = new TestClient(t.baseUrl)
    const events = recordEvents(t.app, ['AiCallCompleted'])
    model.reply({ text: 'Hello, guest.' })
    const answer = await ask(guest, 'support', [userMessage('Hi')])
    events.stop()
    expect(answer.text).toBe('Hello, guest.')
    const [event] = events.of('AiCallCompleted')
    expect(events.of('AiCallCompleted')).toHaveLength(1)
    expect(event).toMatchObject({ userId: null, agent: 'support' })
    const [row] = await t.database.db
      .select()
      .from(aiCalls)
      .where(eq(aiCalls.id, event?.aiCallId ?? -1))
    expect(row).toMatchObject({ userId: null, source: 'support', status: 'completed' })
  })
})
