import { and, asc, eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it } from 'vitest'
import { askAgent, sessionHeaders, userMessage } from '../../../test/helpers/ai-chat.ts'
import { createGroup } from '../../../test/helpers/chat.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import { eventuallyPasses } from '../../../test/helpers/passes.ts'
import { appUnderTest, fakeModelUnderTest } from '../../../test/helpers/under-test.ts'
import { aiCalls, chatMessages, creditTransactions } from '../../db/schema/index.ts'
import { createFeatureMeter } from '../credits/feature-meter.ts'
import { auditLedger } from '../credits/ledger-audit.ts'

// "AI features cost credits" (docs/credits.md): a completed trading or assistant answer and a
// completed chat analysis debit their catalogue cost (config/billing.json) once, as a feature_use
// row linked to the ai_calls row; a user short of credits is refused before the model is asked.

const RETRY_MS = 1_000
const model = fakeModelUnderTest()
const t = appUnderTest(() => ({
  env: {
    AI_BASE_URL: model.url,
    AI_API_KEY: 'sk-test-key',
    AI_MODEL: 'fake-gpt',
    AI_TIMEOUT_MS: '10000',
    AI_JOB_RETRY_MS: String(RETRY_MS),
  },
}))
beforeEach(() => {
  model.reset()
  // Guests are throttled per address, and every guest here is 127.0.0.1: start each test in a new window.
  t.clock.advance(61_000)
})

const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

const featureUses = (userId: number) =>
  t.database.db
    .select()
    .from(creditTransactions)
    .where(and(eq(creditTransactions.userId, userId), eq(creditTransactions.kind, 'feature_use')))
    .orderBy(asc(creditTransactions.id))

const callsOf = (userId: number) =>
  t.database.db.select().from(aiCalls).where(eq(aiCalls.userId, userId)).orderBy(asc(aiCalls.id))

/** The credit figures of GET /api/user, as the app reads them. */
async function creditsOf(client: TestClient) {
  const res = await client.get('/api/user')
  expect(res.status).toBe(200)
  const { available_credits, held_credits, credits_available_for_automation } = res.data
  return { available_credits, held_credits, credits_available_for_automation }
}

/** POSTs a question to an agent with a plain fetch; answers the raw response. */
async function post(client: TestClient, agent: string, text: string) {
  const res = await fetch(`${client.baseUrl}/api/ai/agents/${agent}`, {
    method: 'POST',
    headers: { ...(await sessionHeaders(client)), 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [userMessage(text)] }),
  })
  const body = await res.text()
  const json = (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(body) : undefined
  return { status: res.status, headers: res.headers, body, json }
}

const admin = () => signedInClient(t, { isAdmin: true, verified: true })

describe('a completed answer', () => {
  it('debits the trading agent answer once: one feature_use row with the ai_calls id, GET /api/user and admin billing show it', async () => {
    const { client, user } = await signedInClient(t, { credits: 3 })
    model.reply({ text: ['Buy ', 'low.'] })
    const answer = await askAgent(client, 'trading', [userMessage('What now?')])
    expect(answer.text).toBe('Buy low.')

    const [call] = await callsOf(user.id)
    expect(call).toMatchObject({ status: 'completed', source: 'trading' })
    const rows = await featureUses(user.id)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      amount: '-1.0000',
      balanceAfter: '2.0000',
      reference: 'ai_trading_agent',
      aiCallId: call?.id,
      reason: 'AI trading agent answer',
    })
    // The stream ended after the charge: the figures are already there.
    expect(await creditsOf(client)).toEqual({
      available_credits: 2,
      held_credits: 0,
      credits_available_for_automation: 2,
    })
    const history = await client.get('/api/transaction-history')
    expect(history.data.data[0]).toMatchObject({ kind: 'feature_use', amount: -1 })

    const billing = await (await admin()).client.get(`/api/admin/users/${user.id}/billing`)
    expect(billing.status).toBe(200)
    expect(billing.data.used_features).toEqual([
      {
        feature_id: 'ai_trading_agent',
        name: 'AI trading agent answer',
        uses: 1,
        credits: 1,
        last_used_at: expect.stringMatching(DATE),
      },
    ])
  })

  it('debits 0.5 per assistant answer, each with its own call', async () => {
    const { client, user } = await signedInClient(t, { credits: 1 })
    for (const question of ['One?', 'Two?']) await askAgent(client, 'assistant', [userMessage(question)])
    const calls = await callsOf(user.id)
    expect(calls.map((call) => call.status)).toEqual(['completed', 'completed'])
    const rows = await featureUses(user.id)
    expect(rows.map((row) => [row.amount, row.reference, row.aiCallId])).toEqual([
      ['-0.5000', 'ai_assistant', calls[0]?.id],
      ['-0.5000', 'ai_assistant', calls[1]?.id],
    ])
    expect((await creditsOf(client)).available_credits).toBe(0)
  })
})

describe('a user short of credits', () => {
  it('is refused 422 in the Laravel shape before the model is asked; the AI SDK client throws', async () => {
    const { client, user } = await signedInClient(t, { credits: 0.5 })
    const res = await post(client, 'trading', 'What now?')
    expect(res.status).toBe(422)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    const message = 'Insufficient credits: AI trading agent answer costs 1 credit, 0.5 spendable.'
    expect(res.json).toEqual({ message, errors: { credits: [message] } })
    await expect(askAgent(client, 'trading', [userMessage('Please?')])).rejects.toThrow(
      /Insufficient credits/,
    )
    expect(model.requests).toHaveLength(0)
    expect(await callsOf(user.id)).toEqual([])
    expect(await featureUses(user.id)).toEqual([])
    expect((await creditsOf(client)).available_credits).toBe(0.5)
  })

  it('counts held credits as spent: spendable is balance - held', async () => {
    const { client } = await signedInClient(t, { credits: 1 })
    const hold = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'p-1',
      credits_amount: 0.75,
    })
    expect(hold.status).toBe(201)
    expect((await post(client, 'assistant', 'Hi?')).status).toBe(422)
    expect(model.requests).toHaveLength(0)
  })

  it('cannot start more answers at once than the credits pay for', async () => {
    const { client, user } = await signedInClient(t, { credits: 1 })
    model.reply({ text: ['slow ', 'answer'], delayMs: 300 })
    const [first, second] = await Promise.all([
      post(client, 'trading', 'First?'),
      new Promise((resolve) => setTimeout(resolve, 50)).then(() => post(client, 'trading', 'Second?')),
    ])
    expect([first.status, second.status]).toEqual([200, 422])
    expect(model.requests).toHaveLength(1)
    expect(await featureUses(user.id)).toHaveLength(1)
    expect((await creditsOf(client)).available_credits).toBe(0)
  })
})

describe('a delivered answer is always paid', () => {
  it('a hold taking the credits while the answer streams: the answer is charged below zero, and nothing paid starts until a purchase', async () => {
    const { client, user } = await signedInClient(t, { credits: 1 })
    model.reply({ text: Array.from({ length: 6 }, (_, i) => `part ${i} `), gapMs: 100 })
    const order = { broker_parent_order_id: 'while-streaming', credits_amount: 1 }
    let hold: Promise<{ status: number }> | undefined
    await askAgent(client, 'trading', [userMessage('A long answer?')], {
      onChunk: (chunk) => {
        if (chunk.type === 'text-delta') hold ??= client.post('/api/credit-holds', order)
      },
    })
    expect((await hold)?.status).toBe(201)
    expect((await featureUses(user.id)).map((row) => [row.amount, row.balanceAfter])).toEqual([
      ['-1.0000', '0.0000'],
    ])
    expect(await creditsOf(client)).toEqual({
      available_credits: 0,
      held_credits: 1,
      credits_available_for_automation: -1,
    })
    // The order is cancelled: its credits come back, but the answer stays paid.
    expect(
      (
        await client.post('/api/credit-holds/release', {
          broker_parent_order_id: order.broker_parent_order_id,
        })
      ).status,
    ).toBe(200)
    expect(await creditsOf(client)).toEqual({
      available_credits: 0,
      held_credits: 0,
      credits_available_for_automation: 0,
    })
    expect((await post(client, 'trading', 'Again?')).status).toBe(422)
    expect(model.requests).toHaveLength(1)
  })

  it('an analysis asked with ask_ai, a hold taking the credits before it runs: charged when it completes', async () => {
    const { client, user } = await signedInClient(t, { credits: 2 })
    const group = await createGroup(client)
    // Slow enough that the hold comes while the analysis waits for the model.
    model.reply({ text: 'An uptrend.', delayMs: 300 })
    expect(
      (await client.post('/api/message', { group_id: group.id, body: 'Trend?', ask_ai: true })).status,
    ).toBe(201)
    const hold = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'before-run',
      credits_amount: 2,
    })
    expect(hold.status).toBe(201)
    await t.app.outbox.drain()
    expect((await featureUses(user.id)).map((row) => row.amount)).toEqual(['-2.0000'])
    expect((await creditsOf(client)).credits_available_for_automation).toBe(-2)
    expect(
      (await client.post('/api/message', { group_id: group.id, body: 'More?', ask_ai: true })).status,
    ).toBe(422)
    const audit = await auditLedger(t.database.db)
    expect(audit.failed).toEqual([])
  })
})

describe('what stays free', () => {
  it('the support agent, signed in with no credits', async () => {
    const { client, user } = await signedInClient(t)
    const answer = await askAgent(client, 'support', [userMessage('How do I reset my password?')])
    expect(answer.text).toBe('OK')
    expect(await callsOf(user.id)).toMatchObject([{ status: 'completed', source: 'support' }])
    expect(await featureUses(user.id)).toEqual([])
    // The same user is refused the metered agents.
    expect((await post(client, 'assistant', 'And you?')).status).toBe(422)
    expect(model.requests).toHaveLength(1)
  })

  it('guests, on the assistant and support agents', async () => {
    const allUses = () =>
      t.database.db.select().from(creditTransactions).where(eq(creditTransactions.kind, 'feature_use'))
    const before = (await allUses()).length
    const guest = new TestClient(t.baseUrl)
    for (const agent of ['assistant', 'support']) {
      const answer = await askAgent(guest, agent, [userMessage('Hello?')])
      expect(answer.text).toBe('OK')
    }
    expect(model.requests).toHaveLength(2)
    expect(await allUses()).toHaveLength(before)
    // A signed-in user with no credits is refused the assistant a guest may ask.
    const { client } = await signedInClient(t)
    expect((await post(client, 'assistant', 'Hello?')).status).toBe(422)
    expect(model.requests).toHaveLength(2)
  })
})

describe('a server with no model configured', () => {
  const offline = appUnderTest()

  it('answers from the help articles for free: no check, no charge', async () => {
    const { client, user } = await signedInClient(offline)
    for (const agent of ['trading', 'assistant']) {
      const answer = await askAgent(client, agent, [userMessage('How do I reset my password?')])
      expect(answer.text.length).toBeGreaterThan(0)
    }
    const calls = await offline.database.db.select().from(aiCalls).where(eq(aiCalls.userId, user.id))
    expect(calls.map((call) => call.status)).toEqual(['completed', 'completed'])
    const uses = await offline.database.db
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.userId, user.id))
    expect(uses).toEqual([])
  })
})

describe('an answer that does not complete', () => {
  it('a failed answer charges nothing, and frees its cost for the next question', async () => {
    const { client, user } = await signedInClient(t, { credits: 1 })
    model.reply({ status: 500 })
    const failed = await askAgent(client, 'trading', [userMessage('Hello?')])
    expect(failed.chunks.filter((chunk) => chunk.type === 'error')).toHaveLength(1)
    expect(await callsOf(user.id)).toMatchObject([{ status: 'failed' }])
    expect(await featureUses(user.id)).toEqual([])
    expect((await creditsOf(client)).available_credits).toBe(1)

    await askAgent(client, 'trading', [userMessage('Again?')])
    expect(await featureUses(user.id)).toHaveLength(1)
    expect((await creditsOf(client)).available_credits).toBe(0)
  })

  it('an answer the client gives up on charges nothing', async () => {
    const { client, user } = await signedInClient(t, { credits: 1 })
    model.reply({ text: Array.from({ length: 10 }, (_, i) => `part ${i} `), gapMs: 200 })
    const controller = new AbortController()
    await askAgent(client, 'assistant', [userMessage('A long story?')], {
      signal: controller.signal,
      onChunk: (chunk) => {
        if (chunk.type === 'text-delta') controller.abort()
      },
    }).catch(() => {})
    await eventuallyPasses(async () => expect(await callsOf(user.id)).toMatchObject([{ status: 'aborted' }]))
    expect(await featureUses(user.id)).toEqual([])
    expect((await creditsOf(client)).available_credits).toBe(1)
    // Its cost set aside was released: two more answers fit in the credit.
    for (const question of ['One?', 'Two?']) await askAgent(client, 'assistant', [userMessage(question)])
    expect(await featureUses(user.id)).toHaveLength(2)
  })
})

describe('one charge per AI call', () => {
  it('a second charge of the same call writes nothing (the unique index on feature_use ai_call_id)', async () => {
    const { client, user } = await signedInClient(t, { credits: 5 })
    await askAgent(client, 'trading', [userMessage('Hello?')])
    const [call] = await callsOf(user.id)
    const meter = createFeatureMeter({
      ledger: t.app.services.ledger,
      catalog: t.app.services.catalog,
      log: { warn() {} },
    })
    const replay = { userId: user.id, feature: 'ai_trading_agent' as const, aiCallId: call?.id ?? 0 }
    expect(await meter.charge(replay)).toBe('already-charged')
    expect(await Promise.all([meter.charge(replay), meter.charge(replay)])).toEqual([
      'already-charged',
      'already-charged',
    ])
    expect(await featureUses(user.id)).toHaveLength(1)
    expect((await creditsOf(client)).available_credits).toBe(4)
  })
})

describe('AI market analysis in chat', () => {
  it('a completed analysis debits 2 credits once, linked to its call, and admin billing lists it', async () => {
    const { client, user } = await signedInClient(t, { credits: 2 })
    const group = await createGroup(client)
    model.reply({ text: 'An uptrend.' })
    const res = await client.post('/api/message', { group_id: group.id, body: 'Trend?', ask_ai: true })
    expect(res.status).toBe(201)
    await t.app.outbox.drain()
    const [call] = await callsOf(user.id)
    expect(call).toMatchObject({ status: 'completed', source: 'analysis' })
    const rows = await featureUses(user.id)
    expect(rows.map((row) => [row.amount, row.reference, row.aiCallId])).toEqual([
      ['-2.0000', 'ai_analysis', call?.id],
    ])
    expect((await creditsOf(client)).available_credits).toBe(0)
    const billing = await (await admin()).client.get(`/api/admin/users/${user.id}/billing`)
    expect(billing.data.used_features).toEqual([
      expect.objectContaining({ feature_id: 'ai_analysis', name: 'AI market analysis', uses: 1, credits: 2 }),
    ])
  })

  it('asking without the credits is a 422 on ask_ai: no message, no analysis, no model call', async () => {
    const { client, user } = await signedInClient(t, { credits: 1.5 })
    const group = await createGroup(client)
    const res = await client.post('/api/message', { group_id: group.id, body: 'Trend?', ask_ai: true })
    expect(res.status).toBe(422)
    const message = 'Insufficient credits: AI market analysis costs 2 credits, 1.5 spendable.'
    expect(res.data).toEqual({ message, errors: { ask_ai: [message] } })
    await t.app.outbox.drain()
    expect(model.requests).toHaveLength(0)
    const posted = await t.database.db.select().from(chatMessages).where(eq(chatMessages.groupId, group.id))
    expect(posted.filter((row) => row.kind === 'user')).toEqual([])
    expect(await featureUses(user.id)).toEqual([])
  })

  it('a failed try charges nothing; the retry that completes is charged once, for its own call', async () => {
    const { client, user } = await signedInClient(t, { credits: 2 })
    const group = await createGroup(client)
    model.reply({ status: 500 }, { text: 'A range.' })
    const res = await client.post('/api/message', { group_id: group.id, body: 'Trend?', ask_ai: true })
    expect(res.status).toBe(201)
    await t.app.outbox.drain()
    expect(await callsOf(user.id)).toMatchObject([{ status: 'failed' }])
    expect(await featureUses(user.id)).toEqual([])
    expect((await creditsOf(client)).available_credits).toBe(2)

    t.clock.advance(RETRY_MS * 1.2 + 10)
    await t.app.outbox.drain()
    const calls = await callsOf(user.id)
    expect(calls.map((call) => call.status)).toEqual(['failed', 'completed'])
    const rows = await featureUses(user.id)
    expect(rows.map((row) => [row.amount, row.aiCallId])).toEqual([['-2.0000', calls[1]?.id]])
    expect((await creditsOf(client)).available_credits).toBe(0)
  })
})
