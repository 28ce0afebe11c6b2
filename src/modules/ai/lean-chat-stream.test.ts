import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { FakeModel, type ModelScript } from '../../../test/helpers/fake-model.ts'
import { modelStreamOpener } from './lean-chat-stream.ts'

/**
 * The lean reader against the provider's own doStream, on the same scripted answers: the same
 * requests, the same parts (response ids and times aside), the same failures.
 */
const model = new FakeModel()
let chat: LanguageModelV4
beforeAll(async () => {
  await model.start()
  chat = createOpenAICompatible({
    name: 'model-server',
    baseURL: model.url,
    apiKey: 'sk-test',
    includeUsage: true,
  }).chatModel('fake-gpt')
})
afterAll(() => model.stop())
beforeEach(() => model.reset())

const call = (abortSignal?: AbortSignal): LanguageModelV4CallOptions => ({
  prompt: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'Hello?' }] },
  ],
  tools: [
    {
      type: 'function',
      name: 'lookup',
      description: 'Looks up.',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    },
  ],
  toolChoice: { type: 'auto' },
  includeRawChunks: false,
  ...(abortSignal && { abortSignal }),
})

/** The parts a stream gave, with what differs between two requests (ids, times) left out. */
async function partsOf(stream: AsyncIterable<LanguageModelV4StreamPart>, parts: unknown[] = []) {
  for await (const part of stream) {
    if (part.type === 'response-metadata') parts.push({ type: part.type })
    else if (part.type === 'finish') parts.push({ type: part.type, usage: part.usage })
    else parts.push(part)
  }
  return parts
}

const sdk = async (options: LanguageModelV4CallOptions) =>
  (await chat.doStream(options)).stream as unknown as AsyncIterable<LanguageModelV4StreamPart>
const lean = (options: LanguageModelV4CallOptions) => modelStreamOpener(chat)(options)

describe('the lean reader of a streamed chat completion', () => {
  const answers: Array<[string, ModelScript]> = [
    ['text', { text: ['Hello ', 'there, ', 'world.'], usage: { prompt_tokens: 12, completion_tokens: 3 } }],
    [
      'tool calls',
      {
        toolCalls: [
          { id: 'call_1', name: 'lookup', arguments: { q: 'credits' } },
          { id: 'call_2', name: 'lookup', arguments: { q: 'holds', more: [1, 2] } },
        ],
      },
    ],
    ['an answer broken off', { cut: ['Partial ', 'answer '] }],
  ]

  it.each(answers)('gives the parts the provider gives: %s', async (_name, script) => {
    model.reply(script, script)
    const settle = async (open: typeof lean) => {
      const parts: unknown[] = []
      try {
        await partsOf(await open(call()), parts)
      } catch {
        parts.push('thrown')
      }
      return parts
    }
    const expected = await settle(sdk)
    const got = await settle(lean)
    expect(got).toEqual(expected)
    expect(got.length).toBeGreaterThan(3)
    const [first, second] = model.requests
    expect(second?.raw).toBe(first?.raw)
    expect(second?.headers['user-agent']).toBe(first?.headers['user-agent'])
    expect(second?.headers.authorization).toBe(first?.headers.authorization)
  })

  it('ends with an error part, as the provider does, for a chunk that is not JSON or is an error', async () => {
    // Not scriptable through FakeModel's scripts: a server of its own.
    const { createServer } = await import('node:http')
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n')
      res.write('data: {not json\n\n')
      res.end('data: {"error":{"message":"overloaded","type":"server_error"}}\n\ndata: [DONE]\n\n')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const port = (server.address() as { port: number }).port
      const broken = createOpenAICompatible({
        name: 'model-server',
        baseURL: `http://127.0.0.1:${port}/v1`,
        includeUsage: true,
      }).chatModel('m')
      const summary = async (stream: AsyncIterable<LanguageModelV4StreamPart>) =>
        (await partsOf(stream)).map((part) => {
          const { type, error } = part as { type: string; error?: unknown }
          return type === 'error'
            ? `error ${(error as { name?: string })?.name ?? JSON.stringify(error)}`
            : type
        })
      const expected = await summary((await broken.doStream(call())).stream as never)
      const got = await summary(await modelStreamOpener(broken)(call()))
      expect(got).toEqual(expected)
      expect(got.filter((type) => type.startsWith('error'))).toHaveLength(2)
    } finally {
      server.close()
    }
  })

  it.each([
    [500, 'The server had an error.'],
    [401, 'Incorrect API key provided'],
  ])('throws what the provider throws for an answer of %i', async (status, message) => {
    model.reply({ status, message }, { status, message })
    const failure = async (open: typeof lean) => {
      try {
        await partsOf(await open(call()))
        return 'no failure'
      } catch (error) {
        const { name, statusCode, message, isRetryable, responseBody } = error as Record<string, unknown>
        return { name, statusCode, message, isRetryable, responseBody }
      }
    }
    expect(await failure(lean)).toEqual(await failure(sdk))
  })

  it('stops reading and cuts the request when the call is aborted', async () => {
    const script: ModelScript = { text: ['one ', 'two ', 'three ', 'four'], gapMs: 200 }
    model.reply(script, script)
    const abortAfterFirstText = async (open: typeof lean) => {
      const controller = new AbortController()
      const seen: string[] = []
      try {
        for await (const part of await open(call(controller.signal))) {
          seen.push(part.type)
          if (part.type === 'text-delta') controller.abort()
        }
      } catch {
        seen.push('thrown')
      }
      return seen
    }
    const expected = await abortAfterFirstText(sdk)
    const got = await abortAfterFirstText(lean)
    expect(got).toEqual(expected)
    expect(got.at(-1)).toBe('thrown')
    await expect.poll(() => model.requests.map((request) => request.aborted)).toEqual([true, true])
  })
})
