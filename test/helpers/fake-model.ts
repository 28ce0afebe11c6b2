import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** The chat/completions request body as the AI SDK sends it; other fields are kept as they came. */
export interface ChatBody {
  model?: string
  messages?: any[]
  tools?: any[]
  stream?: boolean
  stream_options?: { include_usage?: boolean }
  [field: string]: unknown
}

export interface ModelRequest {
  method: string
  /** Path without the query, e.g. `/v1/chat/completions`. */
  path: string
  headers: Record<string, string | string[] | undefined>
  /** Parsed JSON body; `{}` when it was empty or not JSON (see `raw`). */
  body: ChatBody
  raw: string
  /** The connection closed before the whole answer went out (client abort, `cut`, stop()); set when the
   * server sees the close, a moment after the client gave up, so poll for it. */
  aborted: boolean
  /** `performance.now()` in this process when the first streamed chunk (for a text answer, its first
   * content) was written to the socket; unset until then, and for answers that are not streamed. Lets a
   * client in the same process time what lies between the model's first token and its own (bench/ai.ts). */
  firstChunkAt?: number
}

export interface ModelToolCall {
  name: string
  arguments: object
  /** Defaults to a fresh `call_...` id. */
  id?: string
}

/** Token counts for the final chunk; defaults: about a token per 4 characters of messages, one per chunk. */
export type ModelUsage = { prompt_tokens?: number; completion_tokens?: number }

/** One scripted answer. `delayMs` waits before the first byte, `gapMs` between streamed chunks. */
export type ModelScript = { delayMs?: number; gapMs?: number } & (
  | { text: string | string[]; usage?: ModelUsage }
  | { toolCalls: ModelToolCall[]; usage?: ModelUsage }
  | { status: number; message?: string }
  | { hang: true }
  | { cut: string[] }
)

const BASE_PATH = '/v1'
const SERVER_ERROR = 'The server had an error while processing your request.'

/** `length` random [0-9a-f] characters for ids. */
const token = (length: number): string =>
  randomBytes(Math.ceil(length / 2))
    .toString('hex')
    .slice(0, length)

/** Waits `ms`, or less if the connection closes first (a client abort or stop() must not wait on a timer). */
function pause(res: ServerResponse, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      res.off('close', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    res.once('close', done)
  })
}

/** OpenAI's error body: `{ error: { message, type, param, code } }`. */
function sendError(res: ServerResponse, status: number, message: string): void {
  const type = status >= 500 ? 'server_error' : 'invalid_request_error'
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify({ error: { message, type, param: null, code: null } }))
}

/** A JSON string in about four pieces, so a client has to join tool-call arguments across chunks. */
function split(text: string): string[] {
  const size = Math.max(1, Math.ceil(text.length / 4))
  const pieces: string[] = []
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size))
  return pieces
}

/**
 * A fake OpenAI-compatible model: a real HTTP server on a loopback port answering
 * `POST {url}/chat/completions` with OpenAI's wire format, streamed (`chat.completion.chunk` SSE events,
 * then `data: [DONE]`) when the body says `stream: true`, one `chat.completion` JSON otherwise. Answers
 * come from a queue filled with `reply()`; when it is empty, `defaultReply()` (a plain 'OK' unless set).
 * Every request is kept in `requests`, headers included; nothing is checked, not even the API key.
 */
export class FakeModel {
  readonly requests: ModelRequest[] = []
  /** The base URL to use as AI_BASE_URL, e.g. `http://127.0.0.1:PORT/v1`. */
  url = ''
  private queue: ModelScript[] = []
  private fallback: ModelScript = { text: 'OK' }
  private waiters: Array<() => void> = []
  private server: Server | null = null

  async start(): Promise<this> {
    // A client that gives up mid-request must not crash the test run.
    const server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, '127.0.0.1', () => resolve())
    })
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${BASE_PATH}`
    this.server = server
    return this
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = null
    if (!server) return
    // Hung and slow answers keep their sockets open; close them so stop() never waits on them.
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Queues answers for the next chat/completions requests, in order. */
  reply(...scripts: ModelScript[]): this {
    this.queue.push(...scripts)
    return this
  }

  /** The answer once the queue is empty. */
  defaultReply(script: ModelScript): this {
    this.fallback = script
    return this
  }

  /** Forgets requests, queued answers and the default. */
  reset(): void {
    this.requests.length = 0
    this.queue = []
    this.fallback = { text: 'OK' }
  }

  /** Waits until at least `n` requests (any path) have arrived, and returns them all. */
  async waitForRequests(n: number, timeoutMs = 5_000): Promise<ModelRequest[]> {
    const deadline = Date.now() + timeoutMs
    while (this.requests.length < n) {
      const left = deadline - Date.now()
      if (left <= 0)
        throw new Error(`expected ${n} model requests within ${timeoutMs} ms, got ${this.requests.length}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
    return this.requests
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const raw = Buffer.concat(chunks).toString('utf8')
    let body: ChatBody = {}
    let parsed = raw === ''
    try {
      const value = JSON.parse(raw)
      if (value && typeof value === 'object' && !Array.isArray(value)) [body, parsed] = [value, true]
    } catch {}
    const method = (req.method ?? 'GET').toUpperCase()
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const request: ModelRequest = { method, path, headers: { ...req.headers }, body, raw, aborted: false }
    res.on('close', () => {
      if (!res.writableFinished) request.aborted = true
    })
    this.requests.push(request)
    for (const wake of this.waiters.splice(0)) wake()
    if (method !== 'POST' || path !== `${BASE_PATH}/chat/completions`) {
      return sendError(res, 404, `Unknown request URL: ${method} ${path}.`)
    }
    if (!parsed) return sendError(res, 400, 'We could not parse the JSON body of your request.')
    await this.answer(res, request, this.queue.shift() ?? this.fallback)
  }

  private async answer(res: ServerResponse, request: ModelRequest, script: ModelScript): Promise<void> {
    const body = request.body
    if (script.delayMs) await pause(res, script.delayMs)
    if (res.destroyed || 'hang' in script) return
    if ('status' in script) return sendError(res, script.status, script.message ?? SERVER_ERROR)
    const meta = {
      id: `chatcmpl-${token(29)}`,
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? 'fake-model',
      system_fingerprint: 'fp_fake',
    }
    const pieces = 'cut' in script ? script.cut : 'text' in script ? [script.text].flat() : []
    const calls = ('toolCalls' in script ? script.toolCalls : []).map((call) => ({
      id: call.id ?? `call_${token(24)}`,
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.arguments) },
    }))
    // The streamed deltas: role with the first piece; each tool call opens with id, type and name.
    const deltas: object[] = pieces.map((content, i) => ({ ...(i === 0 && { role: 'assistant' }), content }))
    calls.forEach((call, index) => {
      const opening = { index, ...call, function: { name: call.function.name, arguments: '' } }
      deltas.push({ ...(index === 0 && { role: 'assistant', content: null }), tool_calls: [opening] })
      for (const part of split(call.function.arguments))
        deltas.push({ tool_calls: [{ index, function: { arguments: part } }] })
    })
    const finish = calls.length > 0 ? 'tool_calls' : 'stop'
    const given = 'usage' in script ? script.usage : undefined
    const prompt = given?.prompt_tokens ?? Math.ceil(JSON.stringify(body.messages ?? []).length / 4)
    const completion = given?.completion_tokens ?? deltas.length
    const usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }

    const cut = async () => {
      // Let what was written leave before the socket goes, so the client sees an answer break mid-way.
      request.aborted = true
      await pause(res, 20)
      res.destroy()
    }
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' })
      if ('cut' in script) {
        res.write(`{"id":"${meta.id}","object":"chat.completion","choices":[{`)
        return cut()
      }
      const tool_calls = calls.length > 0 ? calls : undefined
      const message = {
        role: 'assistant',
        content: tool_calls ? null : pieces.join(''),
        refusal: null,
        tool_calls,
      }
      const choice = { index: 0, message, logprobs: null, finish_reason: finish }
      return void res.end(JSON.stringify({ ...meta, object: 'chat.completion', choices: [choice], usage }))
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' })
    res.flushHeaders()
    const send = (delta: object, finish_reason: string | null, extra: object = {}) => {
      const choices = [{ index: 0, delta, logprobs: null, finish_reason }]
      const data = JSON.stringify({ ...meta, object: 'chat.completion.chunk', choices, ...extra })
      res.write(`data: ${data}\n\n`)
      request.firstChunkAt ??= performance.now()
    }
    for (const [i, delta] of deltas.entries()) {
      if (i > 0 && script.gapMs) await pause(res, script.gapMs)
      if (res.destroyed) return
      send(delta, null)
    }
    if ('cut' in script) return cut()
    if (deltas.length > 0 && script.gapMs) await pause(res, script.gapMs)
    if (res.destroyed) return
    send({}, finish, { usage })
    res.end('data: [DONE]\n\n')
  }
}
