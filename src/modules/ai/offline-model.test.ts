import { generateText, type ModelMessage, stepCountIs, streamText, type ToolSet, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createOfflineModel, OFFLINE_MODEL_ID } from './offline-model.ts'

// The offline model driven through the real `ai` package, as the agents and the analysis job drive
// it, with real tools whose answers the test controls.

interface Hit {
  slug: string
  title: string
  area?: string
  excerpt?: string
}
type Opened = { slug: string; title: string; content: string } | { error: string }

/** The two knowledge base tools, answering `hits` and `opened`, and what they were called with. */
function knowledgeBase(hits: Hit[], opened: (slug: string) => Opened) {
  const calls: Array<{ tool: string; input: unknown }> = []
  const tools = {
    search_knowledge_base: tool({
      description: 'Searches the help articles.',
      inputSchema: z.object({ query: z.string(), area: z.string().optional() }),
      execute: async (input) => {
        calls.push({ tool: 'search_knowledge_base', input })
        return hits
      },
    }),
    get_knowledge_base_article: tool({
      description: 'One help article in full.',
      inputSchema: z.object({ slug: z.string() }),
      execute: async (input) => {
        calls.push({ tool: 'get_knowledge_base_article', input })
        return opened(input.slug)
      },
    }),
  } satisfies ToolSet
  return { tools, calls }
}

const HITS: Hit[] = [
  { slug: 'credit-holds', title: 'Credit holds and automated orders', area: 'credits', excerpt: 'Holds…' },
  { slug: 'credits-explained', title: 'Credits explained', area: 'credits', excerpt: 'Credits…' },
  { slug: 'buying-credits', title: 'Buying credits', area: 'billing', excerpt: 'Buy…' },
  { slug: 'getting-support', title: 'Getting support', area: 'support', excerpt: 'Help…' },
]
const CONTENT = 'A hold reserves credits for an automated order.\n\nIt is captured when the order fills.'
const article = (slug: string): Opened => {
  const hit = HITS.find((h) => h.slug === slug)
  return hit ? { slug, title: hit.title, content: CONTENT } : { error: 'No article has that slug.' }
}

const ask = (text: string): ModelMessage[] => [{ role: 'user', content: text }]

/** Streams an answer with streamText, as the agents do; answers the parts seen and the text. */
async function stream(options: {
  messages: ModelMessage[]
  tools?: ToolSet
  model?: ReturnType<typeof createOfflineModel>
}) {
  const result = streamText({
    model: options.model ?? createOfflineModel(),
    system: 'You are the support agent.',
    messages: options.messages,
    tools: options.tools,
    stopWhen: stepCountIs(5),
    maxRetries: 0,
  })
  const parts: Array<{ type: string; [key: string]: unknown }> = []
  for await (const part of result.fullStream) parts.push(part as (typeof parts)[number])
  const errors = parts.filter((part) => part.type === 'error')
  if (errors.length > 0) throw errors[0]?.error
  const text = parts
    .filter((part) => part.type === 'text-delta')
    .map((part) => part.text as string)
    .join('')
  const toolCalls = parts
    .filter((part) => part.type === 'tool-call')
    .map((part) => ({ id: part.toolCallId, name: part.toolName, input: part.input }))
  return { parts, text, toolCalls, steps: parts.filter((part) => part.type === 'finish-step').length }
}

describe('the offline model with the knowledge base tools', () => {
  it('searches for the question, opens the best hit and quotes it (streamText)', async () => {
    const kb = knowledgeBase(HITS, article)
    const answer = await stream({ messages: ask('  How do credit holds work?  '), tools: kb.tools })

    expect(kb.calls).toEqual([
      { tool: 'search_knowledge_base', input: { query: 'How do credit holds work?' } },
      { tool: 'get_knowledge_base_article', input: { slug: 'credit-holds' } },
    ])
    expect(answer.toolCalls.map((call) => call.name)).toEqual([
      'search_knowledge_base',
      'get_knowledge_base_article',
    ])
    expect(answer.steps).toBe(3)
    // The quote, then the next two hits as related articles (the fourth is left out).
    expect(answer.text).toBe(
      [
        'From the help article "Credit holds and automated orders":',
        '',
        CONTENT,
        '',
        'Related articles:',
        '- Credits explained (credits-explained)',
        '- Buying credits (buying-credits)',
      ].join('\n'),
    )
    // Streamed word by word, as a model streams tokens.
    const deltas = answer.parts.filter((part) => part.type === 'text-delta')
    expect(deltas.length).toBeGreaterThan(10)
    expect(answer.parts.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })
  })

  it('gives the same answer through generateText, in three steps', async () => {
    const kb = knowledgeBase(HITS, article)
    const result = await generateText({
      model: createOfflineModel(),
      messages: ask('How do credit holds work?'),
      tools: kb.tools,
      stopWhen: stepCountIs(5),
    })
    expect(result.steps.map((step) => step.finishReason)).toEqual(['tool-calls', 'tool-calls', 'stop'])
    expect(result.steps.flatMap((step) => step.toolCalls.map((call) => [call.toolName, call.input]))).toEqual(
      [
        ['search_knowledge_base', { query: 'How do credit holds work?' }],
        ['get_knowledge_base_article', { slug: 'credit-holds' }],
      ],
    )
    expect(result.text).toBe(
      (await stream({ messages: ask('How do credit holds work?'), tools: kb.tools })).text,
    )
    expect(result.response.modelId).toBe(OFFLINE_MODEL_ID)
    expect(result.totalUsage.outputTokens).toBeGreaterThan(0)
  })

  it('quotes only the start of a long article, marked with an ellipsis', async () => {
    const long = `${'Holds reserve credits. '.repeat(100)}THE END`
    const kb = knowledgeBase([HITS[0] as Hit], (slug) => ({ slug, title: 'Long', content: long }))
    const { text } = await stream({ messages: ask('credit holds'), tools: kb.tools })
    const quote = text.split('\n')[2] as string
    expect(quote.endsWith('…')).toBe(true)
    expect(long.startsWith(quote.slice(0, -1))).toBe(true)
    expect(quote.length).toBeLessThan(long.length)
    expect(text).not.toContain('THE END')
    // One hit: no related articles.
    expect(text).not.toContain('Related articles')
  })

  it('searches with at most 200 characters of the question, its text parts joined', async () => {
    const kb = knowledgeBase([], article)
    const question = 'q'.repeat(300)
    await stream({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: question },
            { type: 'text', text: 'second part' },
          ],
        },
      ],
      tools: kb.tools,
    })
    expect(kb.calls).toEqual([{ tool: 'search_knowledge_base', input: { query: question.slice(0, 200) } }])
  })

  it('answers that nothing was found when the search has no hits, without opening anything', async () => {
    const kb = knowledgeBase([], article)
    const answer = await stream({ messages: ask('What is the weather on Mars?'), tools: kb.tools })
    expect(kb.calls.map((call) => call.tool)).toEqual(['search_knowledge_base'])
    expect(answer.text).toBe(
      'I could not find a help article about that. Try other words, or write to support from the Help page.',
    )
    expect(answer.steps).toBe(2)
  })

  it('answers that nothing was found when the article cannot be opened', async () => {
    const kb = knowledgeBase(HITS, () => ({ error: 'No article has that slug.' }))
    const answer = await stream({ messages: ask('How do credit holds work?'), tools: kb.tools })
    expect(kb.calls.map((call) => call.tool)).toEqual(['search_knowledge_base', 'get_knowledge_base_article'])
    expect(answer.text).toMatch(/^I could not find a help article about that\./)
  })

  it('searches again for a new question, not reusing the results of an earlier turn', async () => {
    const first = knowledgeBase(HITS, article)
    const earlier = await generateText({
      model: createOfflineModel(),
      messages: ask('How do credit holds work?'),
      tools: first.tools,
      stopWhen: stepCountIs(5),
    })
    const kb = knowledgeBase([], article)
    const answer = await stream({
      messages: [...ask('How do credit holds work?'), ...earlier.response.messages, ...ask('And refunds?')],
      tools: kb.tools,
    })
    expect(kb.calls).toEqual([{ tool: 'search_knowledge_base', input: { query: 'And refunds?' } }])
    expect(answer.text).toMatch(/^I could not find a help article about that\./)
  })
})

describe('the offline model without tools (a chat analysis)', () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

  it('says no model is configured', async () => {
    const result = await generateText({ model: createOfflineModel(), messages: ask('Is AAPL a buy?') })
    expect(result.text).toBe(
      'No AI model is configured on this server, so this message could not be analysed. The offline assistant only answers from the help articles.',
    )
    expect(result.steps).toHaveLength(1)
    expect(result.toolCalls).toEqual([])
  })

  it('counts the images of the message it could not analyse', async () => {
    const withImages = (count: number): ModelMessage[] => [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What does this chart say?' },
          ...Array.from({ length: count }, () => ({
            type: 'file' as const,
            data: png,
            mediaType: 'image/png',
          })),
        ],
      },
    ]
    const one = await generateText({ model: createOfflineModel(), messages: withImages(1) })
    expect(one.text).toMatch(
      /^No AI model is configured on this server, so this message and 1 image could not be analysed\./,
    )
    const three = await generateText({ model: createOfflineModel(), messages: withImages(3) })
    expect(three.text).toMatch(/this message and 3 images could not be analysed\./)
    // Streamed the same way.
    expect((await stream({ messages: withImages(3) })).text).toBe(three.text)
    // Read through generateText too, as the analysis job calls it.
    const generated = await generateText({
      model: createOfflineModel(),
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'And these?' },
            { type: 'file', data: png, mediaType: 'image/png' },
            { type: 'file', data: png, mediaType: 'image/png' },
          ],
        },
      ],
    })
    expect(generated.text).toMatch(/this message and 2 images could not be analysed\./)
  })

  it('counts only the images of the last user message', async () => {
    const result = await generateText({
      model: createOfflineModel(),
      messages: [
        { role: 'user', content: [{ type: 'file', data: png, mediaType: 'image/png' }] },
        { role: 'assistant', content: 'Earlier answer.' },
        { role: 'user', content: 'And now without a chart?' },
      ],
    })
    expect(result.text).toMatch(
      /^No AI model is configured on this server, so this message could not be analysed\./,
    )
  })
})

describe('the offline model is deterministic', () => {
  it('answers the same input with the same tool calls and text, on a fresh model or the same one', async () => {
    const run = async (model = createOfflineModel()) => {
      const kb = knowledgeBase(HITS, article)
      const answer = await stream({ messages: ask('How do credit holds work?'), tools: kb.tools, model })
      return { answer, calls: kb.calls }
    }
    const a = await run()
    const b = await run()
    // Fresh models: what the model put in the stream, ids and token counts included, is the same
    // (the SDK adds timings, response ids and dates of its own).
    const MODEL_FIELDS = [
      'type',
      'id',
      'text',
      'toolCallId',
      'toolName',
      'input',
      'output',
      'finishReason',
      'usage',
    ]
    const comparable = (parts: Array<{ type: string; [key: string]: unknown }>) =>
      parts.map((part) =>
        Object.fromEntries(Object.entries(part).filter(([key]) => MODEL_FIELDS.includes(key))),
      )
    expect(comparable(b.answer.parts)).toEqual(comparable(a.answer.parts))
    expect(b.calls).toEqual(a.calls)

    // One model asked twice: the same answer (its call ids count on, so they differ).
    const model = createOfflineModel()
    const first = await run(model)
    const second = await run(model)
    expect(second.answer.text).toBe(first.answer.text)
    expect(second.calls).toEqual(first.calls)
    expect(second.answer.toolCalls.map(({ name, input }) => ({ name, input }))).toEqual(
      first.answer.toolCalls.map(({ name, input }) => ({ name, input })),
    )
    expect(second.answer.toolCalls[0]?.id).not.toBe(first.answer.toolCalls[0]?.id)

    // Without tools, too.
    const texts = await Promise.all(
      [0, 1, 2].map(
        async () => (await generateText({ model: createOfflineModel(), messages: ask('Hi') })).text,
      ),
    )
    expect(new Set(texts).size).toBe(1)
  })
})
