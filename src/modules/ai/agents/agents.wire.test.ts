import { asc, eq } from 'drizzle-orm'
import { beforeEach, describe, expect, it } from 'vitest'
import { sessionHeaders, userMessage } from '../../../../test/helpers/ai-chat.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import type { ModelScript } from '../../../../test/helpers/fake-model.ts'
import { upstreamEnv } from '../../../../test/helpers/proxy.ts'
import {
  appUnderTest,
  fakeModelUnderTest,
  fakeUpstreamUnderTest,
} from '../../../../test/helpers/under-test.ts'
import { aiCalls } from '../../../db/schema/index.ts'

/**
 * The exact bytes an agent answers and what it records, for fixed model scripts. The snapshot was
 * taken while the agents ran on the AI SDK's streamText; the lean step loop (model-steps.ts) must
 * answer the same bytes, the same `ai_calls` rows and the same follow-up model requests.
 */
const model = fakeModelUnderTest()
const upstream = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({
  env: {
    AI_BASE_URL: model.url,
    AI_API_KEY: 'sk-test-key',
    AI_MODEL: 'fake-gpt',
    ...upstreamEnv(upstream.url),
  },
}))
beforeEach(() => {
  model.reset()
  upstream.reset()
  t.clock.advance(61_000)
})

const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name)

/**
 * Tools called in one step run at once and answer in the order they finish, on the SDK's path as
 * on this one (a database's timing decides): their outputs are compared in the calls' order.
 */
function inCallOrder(body: string): string {
  const events = body.split('\n\n')
  const isOutput = (event: string) => /^data: \{"type":"tool-output-/.test(event)
  const callId = (event: string) => /"toolCallId":"([^"]+)"/.exec(event)?.[1] ?? ''
  for (let at = 0; at < events.length; at++) {
    let end = at
    while (end < events.length && isOutput(events[end] as string)) end++
    if (end - at > 1) {
      const run = events.slice(at, end).sort((a, b) => callId(a).localeCompare(callId(b)))
      events.splice(at, run.length, ...run)
    }
    at = end
  }
  return events.join('\n\n')
}

const usage = { prompt_tokens: 10, completion_tokens: 3 }
const scenarios: Array<[string, 'support' | 'assistant', boolean, ModelScript[]]> = [
  ['text', 'support', true, [{ text: ['Hello ', 'there, ', 'world.'], usage }]],
  [
    'a tool call, then text',
    'support',
    true,
    [
      {
        toolCalls: [{ id: 'call_1', name: 'search_knowledge_base', arguments: { query: 'credits' } }],
        usage,
      },
      { text: ['See ', 'the articles.'], usage },
    ],
  ],
  [
    'two tool calls in one step',
    'support',
    true,
    [
      {
        toolCalls: [
          { id: 'call_1', name: 'search_knowledge_base', arguments: { query: 'credits' } },
          { id: 'call_2', name: 'get_knowledge_base_article', arguments: { slug: 'no-such-article' } },
        ],
        usage,
      },
      { text: 'Done.', usage },
    ],
  ],
  [
    'a tool a guest may not use',
    'assistant',
    false,
    [
      { toolCalls: [{ id: 'call_1', name: 'list_strategies', arguments: {} }], usage },
      { text: 'Sorry.', usage },
    ],
  ],
  [
    'a tool call with input its schema refuses',
    'support',
    true,
    [
      { toolCalls: [{ id: 'call_1', name: 'search_knowledge_base', arguments: {} }], usage },
      { text: 'Hm.', usage },
    ],
  ],
  [
    'a tool that is not offered',
    'support',
    true,
    [
      { toolCalls: [{ id: 'call_1', name: 'no_such_tool', arguments: {} }], usage },
      { text: 'Hm.', usage },
    ],
  ],
  [
    'six steps of tool calls (the fifth is the last)',
    'support',
    true,
    Array.from({ length: 6 }, (_, i) => ({
      toolCalls: [{ id: `call_${i}`, name: 'search_knowledge_base', arguments: { query: 'credits' } }],
      usage,
    })),
  ],
  ['a model answering 500', 'support', true, [{ status: 500, message: 'quota' }]],
  ['a model breaking off', 'support', true, [{ cut: ['Partial ', 'answer '] }]],
]

describe('what an agent answers and records, byte for byte', () => {
  it.each(scenarios)('%s', async (name, agent, signedIn, scripts) => {
    const { client, user } = signedIn
      ? await signedInClient(t)
      : { client: new TestClient(t.baseUrl), user: undefined }
    model.reply(...scripts)
    const res = await fetch(`${client.baseUrl}/api/ai/agents/${agent}`, {
      method: 'POST',
      headers: { ...(await sessionHeaders(client)), 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [userMessage('Question?', 'm1')] }),
    })
    const body = await res.text()
    const rows = await t.database.db
      .select()
      .from(aiCalls)
      .where(user ? eq(aiCalls.userId, user.id) : eq(aiCalls.source, agent))
      .orderBy(asc(aiCalls.id))
    const row = rows.at(-1)
    const record = row && {
      status: row.status,
      steps: row.steps,
      inputTokens: row.inputTokens,
      outputTokens: row.outputTokens,
      error: row.error,
      toolCalls: row.toolCalls.map(({ name, ok }) => ({ name, ok })).sort(byName),
    }
    // What the model was sent after the first request: the tool calls and results it was handed.
    const followUps = model.requests.slice(1).map((request) => request.body.messages?.slice(2))
    const firstRequest = { ...model.requests[0]?.body, messages: undefined }
    await expect(
      `${JSON.stringify({ status: res.status, record, firstRequest, followUps }, null, 1)}\n${inCallOrder(body)}`,
    ).toMatchFileSnapshot(`__snapshots__/wire/${name.replaceAll(' ', '-')}.txt`)
  })
})
