import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { FakeModel } from './fake-model.ts'

// Each script kind goes over real HTTP in OpenAI's wire format; the AI tests rely on it.
const model = new FakeModel()
beforeAll(() => model.start())
afterAll(() => model.stop())
beforeEach(() => model.reset())

/** A chat/completions request the way `@ai-sdk/openai-compatible` sends it. */
function complete(body: Record<string, unknown> = {}, init: RequestInit = {}): Promise<Response> {
  return fetch(`${model.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
      ...body,
    }),
    ...init,
  })
}

/** The `data:` payloads of an SSE text, in order: parsed JSON, or the raw string (`[DONE]`). */
function sseData(text: string): any[] {
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length))
    .map((data) => (data === '[DONE]' ? data : JSON.parse(data)))
}

/** Reads a body until it ends or breaks; returns what arrived and the error, if any. */
async function readAll(res: Response): Promise<{ text: string; error?: Error }> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let text = ''
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return { text }
      text += decoder.decode(value, { stream: true })
    }
  } catch (error) {
    return { text, error: error as Error }
  }
}

describe('FakeModel', () => {
  it('streams text as chat.completion.chunk events, then stop with usage, then [DONE], and records the request', async () => {
    model.reply({ text: ['Hel', 'lo', ' there'], usage: { prompt_tokens: 7 } })
    const res = await complete({ tools: [{ type: 'function', function: { name: 'x', parameters: {} } }] })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const events = sseData(await res.text())
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1)
    expect(chunks).toHaveLength(4)
    for (const chunk of chunks) {
      expect(chunk).toMatchObject({ id: chunks[0].id, object: 'chat.completion.chunk', model: 'gpt-test' })
      expect(chunk.created).toBeTypeOf('number')
      expect(chunk.choices).toHaveLength(1)
      expect(chunk.choices[0].index).toBe(0)
    }
    expect(chunks[0].id).toMatch(/^chatcmpl-[A-Za-z0-9]+$/)
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: 'Hel' })
    expect(chunks.slice(0, 3).map((c) => c.choices[0].delta.content)).toEqual(['Hel', 'lo', ' there'])
    expect(chunks.slice(0, 3).every((c) => c.choices[0].finish_reason === null)).toBe(true)
    expect(chunks[3].choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' })
    expect(chunks[3].usage).toEqual({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 })

    expect(model.requests).toHaveLength(1)
    const [request] = model.requests
    expect(request).toMatchObject({ method: 'POST', path: '/v1/chat/completions', aborted: false })
    expect(request?.headers.authorization).toBe('Bearer sk-test')
    expect(request?.body).toMatchObject({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: { name: 'x' } }],
    })
  })

  it('streams tool calls with the arguments split across chunks, then finish_reason tool_calls', async () => {
    model.reply({
      toolCalls: [
        { name: 'search_knowledge_base', arguments: { query: 'fees', limit: 3 } },
        { name: 'get_strategy', arguments: { id: 12 }, id: 'call_fixed' },
      ],
    })
    const chunks = sseData(await (await complete()).text()).slice(0, -1)
    const deltas = chunks.map((c) => c.choices[0].delta)
    const calls = [0, 1].map((index) =>
      deltas.flatMap((d) => d.tool_calls ?? []).filter((t) => t.index === index),
    )
    for (const [index, name] of ['search_knowledge_base', 'get_strategy'].entries()) {
      const [opening, ...rest] = calls[index] ?? []
      expect(opening).toMatchObject({ index, type: 'function', function: { name, arguments: '' } })
      expect(rest.length).toBeGreaterThan(1)
      for (const piece of rest) expect(Object.keys(piece).sort()).toEqual(['function', 'index'])
      const args = rest.map((piece) => piece.function.arguments).join('')
      expect(JSON.parse(args)).toEqual(index === 0 ? { query: 'fees', limit: 3 } : { id: 12 })
    }
    expect(calls[0]?.[0].id).toMatch(/^call_[A-Za-z0-9]+$/)
    expect(calls[1]?.[0].id).toBe('call_fixed')
    expect(deltas[0]).toMatchObject({ role: 'assistant', content: null })
    expect(chunks.at(-1).choices[0].finish_reason).toBe('tool_calls')
    expect(chunks.at(-1).usage.total_tokens).toBeGreaterThan(0)
  })

  it('answers the queue in order, then the default reply (OK unless set)', async () => {
    model.reply({ text: 'one' }).reply({ text: 'two' })
    const texts = async () => {
      const events = sseData(await (await complete()).text()).slice(0, -1)
      return events.map((c) => c.choices[0].delta.content ?? '').join('')
    }
    expect([await texts(), await texts(), await texts()]).toEqual(['one', 'two', 'OK'])
    model.defaultReply({ text: ['De', 'fault'] })
    expect(await texts()).toBe('Default')
  })

  it('answers one chat.completion JSON when the request does not stream', async () => {
    model.reply({ text: ['Hel', 'lo'] }, { toolCalls: [{ name: 'list_news', arguments: {}, id: 'call_1' }] })
    const text = (await (await complete({ stream: undefined, stream_options: undefined })).json()) as any
    expect(text).toMatchObject({
      object: 'chat.completion',
      model: 'gpt-test',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello' }, finish_reason: 'stop' }],
      usage: { completion_tokens: 2 },
    })
    expect(text.id).toMatch(/^chatcmpl-/)
    const tool = (await (await complete({ stream: false })).json()) as any
    expect(tool.choices[0]).toMatchObject({
      message: {
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'list_news', arguments: '{}' } }],
      },
      finish_reason: 'tool_calls',
    })
  })

  it('status: answers an OpenAI-style JSON error; unknown paths are a 404 of the same shape', async () => {
    model.reply({ status: 500 }, { status: 429, message: 'Rate limit reached' })
    const failed = await complete()
    expect(failed.status).toBe(500)
    expect(failed.headers.get('content-type')).toBe('application/json')
    expect(await failed.json()).toEqual({
      error: {
        message: 'The server had an error while processing your request.',
        type: 'server_error',
        param: null,
        code: null,
      },
    })
    const limited = await complete()
    expect(limited.status).toBe(429)
    expect(((await limited.json()) as any).error.message).toBe('Rate limit reached')
    const lost = await fetch(`${model.url}/models`)
    expect(lost.status).toBe(404)
    expect(((await lost.json()) as any).error.type).toBe('invalid_request_error')
    expect(model.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/chat/completions',
      'POST /v1/chat/completions',
      'GET /v1/models',
    ])
  })

  it('hang: never answers, marks the request aborted when the client gives up, and stop() does not wait', async () => {
    model.reply({ hang: true })
    const error = await complete({}, { signal: AbortSignal.timeout(300) }).catch((e: Error) => e)
    expect((error as Error).name).toBe('TimeoutError')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(model.requests[0]?.aborted).toBe(true)

    const other = await new FakeModel().start()
    other.reply({ hang: true })
    const pending = fetch(`${other.url}/chat/completions`, { method: 'POST', body: '{}' }).catch(
      (e: Error) => e,
    )
    await other.waitForRequests(1)
    const stopping = performance.now()
    await other.stop()
    expect(performance.now() - stopping).toBeLessThan(1000)
    expect(await pending).toBeInstanceOf(Error)
  })

  it('cut: streams the pieces, then the socket goes without a finish chunk or [DONE]', async () => {
    model.reply({ cut: ['Partial ', 'answer'] })
    const res = await complete()
    expect(res.status).toBe(200)
    const { text, error } = await readAll(res)
    expect(error).toBeInstanceOf(Error)
    const events = sseData(text)
    expect(events.map((c) => c.choices[0].delta.content)).toEqual(['Partial ', 'answer'])
    expect(events.every((c) => c.choices[0].finish_reason === null)).toBe(true)
    expect(model.requests[0]?.aborted).toBe(true)
  })

  it('delayMs waits before the first chunk and gapMs between chunks', async () => {
    model.reply({ text: ['a', 'b', 'c'], delayMs: 300, gapMs: 100 })
    const started = performance.now()
    const res = await complete()
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
    expect(sseData(first)[0].choices[0].delta.content).toBe('a')
    while (!(await reader.read()).done) {}
    // Three gaps: before 'b', before 'c', before the finish chunk.
    expect(performance.now() - started).toBeGreaterThanOrEqual(290 + 3 * 95)
  })

  it('waitForRequests resolves once n requests arrived, and fails after the timeout', async () => {
    const waiting = model.waitForRequests(2, 2_000)
    await complete().then((r) => r.text())
    await complete().then((r) => r.text())
    expect(await waiting).toHaveLength(2)
    await expect(model.waitForRequests(3, 100)).rejects.toThrow(
      /expected 3 model requests within 100 ms, got 2/,
    )
  })
})
