import type { Readable } from 'node:stream'
import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import {
  combineHeaders,
  createLanguageModelResponseMetadata,
  getRuntimeEnvironmentUserAgent,
  VERSION as PROVIDER_UTILS_VERSION,
  resolve,
  StreamingToolCallTracker,
  withUserAgentSuffix,
} from '@ai-sdk/provider-utils'
import { InvalidResponseDataError, JSONParseError } from 'ai'
import { request } from 'undici'

/** The parts of @ai-sdk/openai-compatible's chat model this reader relies on (not in its types). */
interface CompatibleChatModel {
  modelId: string
  config: {
    url(options: { path: string; modelId: string }): string
    headers?: unknown
    includeUsage?: boolean
  }
  getArgs(
    options: LanguageModelV4CallOptions,
  ): Promise<{ args: Record<string, unknown>; warnings: unknown[] }>
  transformRequestBody(args: Record<string, unknown>, warnings: unknown[]): Record<string, unknown>
  convertUsage(usage: unknown): Extract<LanguageModelV4StreamPart, { type: 'finish' }>['usage']
  failedResponseHandler(options: {
    url: string
    requestBodyValues: unknown
    response: Response
  }): Promise<{ value: Error }>
}

/** What opens one model call's stream: the provider's doStream, or the lean reader below. */
export type OpenModelStream = (
  options: LanguageModelV4CallOptions,
) => Promise<AsyncIterable<LanguageModelV4StreamPart>>

const isCompatibleChatModel = (model: LanguageModelV4): boolean =>
  model.provider.endsWith('.chat') &&
  typeof (model as unknown as Partial<CompatibleChatModel>).getArgs === 'function' &&
  typeof (model as unknown as Partial<CompatibleChatModel>).transformRequestBody === 'function'

/**
 * How the agents open a model call. For @ai-sdk/openai-compatible's chat model, the lean reader:
 * the provider builds the request (body, URL, headers: its own code), and the streamed answer is
 * read from a Node stream into the same parts its doStream makes, without the five web-stream
 * stages (fetch body, text decoder, SSE parser, schema check, transform) each chunk goes through
 * there. Any other model (the offline one) is streamed by its own doStream.
 */
export function modelStreamOpener(model: LanguageModelV4): OpenModelStream {
  if (!isCompatibleChatModel(model)) {
    return async (options) =>
      (await model.doStream(options)).stream as unknown as AsyncIterable<LanguageModelV4StreamPart>
  }
  const chat = model as unknown as CompatibleChatModel
  return (options) => streamChatCompletions(chat, options)
}

/** One model call over HTTP: the provider's request, the answer read as its doStream reads it. */
async function streamChatCompletions(
  model: CompatibleChatModel,
  options: LanguageModelV4CallOptions,
): Promise<AsyncIterable<LanguageModelV4StreamPart>> {
  const { args, warnings } = await model.getArgs({ ...options })
  const body = model.transformRequestBody(
    {
      ...args,
      stream: true,
      stream_options: model.config.includeUsage ? { include_usage: true } : undefined,
    },
    warnings,
  )
  const url = model.config.url({ path: '/chat/completions', modelId: model.modelId })
  // As the provider's postJsonToApi sends them.
  const headers = withUserAgentSuffix(
    combineHeaders(
      { 'content-type': 'application/json' },
      (await resolve(model.config.headers as Record<string, string | undefined>)) ?? {},
      options.headers,
    ),
    `ai-sdk-provider-utils/${PROVIDER_UTILS_VERSION}`,
    getRuntimeEnvironmentUserAgent(),
  )
  const response = await request(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: options.abortSignal,
  })
  if (response.statusCode < 200 || response.statusCode > 299) {
    const text = await response.body.text()
    const failed = await model.failedResponseHandler({
      url,
      requestBodyValues: body,
      response: new Response(text, {
        status: response.statusCode,
        headers: response.headers as Record<string, string>,
      }),
    })
    throw failed.value
  }
  return readParts(response.body, model, warnings)
}

/** The SSE events' data, one string an event (the SDK's EventSourceParserStream, data lines only). */
async function* sseData(body: Readable): AsyncGenerator<string> {
  body.setEncoding('utf8')
  let buffered = ''
  let data: string[] = []
  for await (const piece of body as AsyncIterable<string>) {
    buffered += piece
    let end = buffered.search(/\r\n|\r|\n/)
    while (end >= 0) {
      const line = buffered.slice(0, end)
      buffered = buffered.slice(buffered[end] === '\r' && buffered[end + 1] === '\n' ? end + 2 : end + 1)
      if (line === '') {
        if (data.length > 0) yield data.join('\n')
        data = []
      } else if (line.startsWith('data:')) {
        data.push(line.slice(line[5] === ' ' ? 6 : 5))
      }
      end = buffered.search(/\r\n|\r|\n/)
    }
  }
  if (data.length > 0) yield data.join('\n')
}

interface ChunkDelta {
  content?: unknown
  reasoning_content?: string | null
  reasoning?: string | null
  refusal?: string | null
  tool_calls?: Array<{
    index?: number
    id?: string | null
    function?: { name?: string | null; arguments?: string | null }
  }>
}

/** The text and reasoning of a delta's content, as the provider reads it. */
function contentParts(content: unknown): Array<{ type: 'text' | 'reasoning'; text: string }> {
  if (content == null) return []
  if (typeof content === 'string') return content.length > 0 ? [{ type: 'text', text: content }] : []
  if (!Array.isArray(content)) return []
  const parts: Array<{ type: 'text' | 'reasoning'; text: string }> = []
  for (const part of content) {
    if (part?.type === 'text' && typeof part.text === 'string') {
      if (part.text.length > 0) parts.push({ type: 'text', text: part.text })
    } else if (part?.type === 'thinking' && Array.isArray(part.thinking)) {
      const text = part.thinking
        .filter(
          (chunk: { type?: unknown; text?: unknown }) =>
            chunk?.type === 'text' && typeof chunk.text === 'string',
        )
        .map((chunk: { text: string }) => chunk.text)
        .join('')
      if (text.length > 0) parts.push({ type: 'reasoning', text })
    }
  }
  return parts
}

/**
 * The chunks of a streamed chat completion as the parts @ai-sdk/openai-compatible's doStream makes of
 * them: text and reasoning under its fixed ids, tool calls through the SDK's own StreamingToolCallTracker,
 * an `error` part for a chunk that is not JSON or is an error, usage and the end in `finish`.
 */
async function* readParts(
  body: Readable,
  model: CompatibleChatModel,
  warnings: unknown[],
): AsyncGenerator<LanguageModelV4StreamPart> {
  const out: LanguageModelV4StreamPart[] = []
  const tracker = new StreamingToolCallTracker({
    enqueue: (part: LanguageModelV4StreamPart) => out.push(part),
  } as unknown as TransformStreamDefaultController<LanguageModelV4StreamPart>)
  // The provider holds a call's arguments back until its name has come (some servers send it late).
  const pending = new Map<number, { id: string | null; args: string }>()
  const forwarded = new Set<number>()
  let finishReason: string | undefined
  let failed = false
  let usage: unknown
  let metadataSent = false
  let reasoning = false
  let text = false

  const reasoningDelta = (delta: string) => {
    if (text) {
      out.push({ type: 'text-end', id: 'txt-0' })
      text = false
    }
    if (!reasoning) {
      out.push({ type: 'reasoning-start', id: 'reasoning-0' })
      reasoning = true
    }
    out.push({ type: 'reasoning-delta', id: 'reasoning-0', delta })
  }
  const textDelta = (delta: string) => {
    if (reasoning) {
      out.push({ type: 'reasoning-end', id: 'reasoning-0' })
      reasoning = false
    }
    if (!text) {
      out.push({ type: 'text-start', id: 'txt-0' })
      text = true
    }
    out.push({ type: 'text-delta', id: 'txt-0', delta })
  }
  const toolCallDelta = (call: NonNullable<ChunkDelta['tool_calls']>[number]) => {
    const index = call.index
    if (index == null || forwarded.has(index)) return tracker.processDelta(call as never)
    let held = pending.get(index)
    if (!held) {
      held = { id: call.id ?? null, args: '' }
      pending.set(index, held)
    } else if (held.id == null && call.id != null) held.id = call.id
    if (call.function?.arguments != null) held.args += call.function.arguments
    const name = call.function?.name
    if (name != null) {
      tracker.processDelta({ index, id: held.id, function: { name, arguments: held.args } } as never)
      pending.delete(index)
      forwarded.add(index)
    }
  }

  yield { type: 'stream-start', warnings: warnings as never }
  for await (const data of sseData(body)) {
    if (data === '[DONE]') continue
    let value: {
      error?: unknown
      usage?: unknown
      choices?: unknown
      id?: string
      model?: string
      created?: number
    }
    try {
      value = JSON.parse(data)
      if (value === null || typeof value !== 'object') throw new Error('not an object')
    } catch (cause) {
      failed = true
      yield { type: 'error', error: new JSONParseError({ text: data, cause }) }
      continue
    }
    if ('error' in value) {
      failed = true
      yield { type: 'error', error: value.error }
      continue
    }
    if (!metadataSent) {
      const metadata = createLanguageModelResponseMetadata({
        id: value.id,
        model: value.model,
        created: value.created || undefined,
      })
      if (Object.values(metadata).some(Boolean)) {
        metadataSent = true
        yield { type: 'response-metadata', ...metadata }
      }
    }
    if (value.usage != null) usage = value.usage
    const choice = Array.isArray(value.choices)
      ? (value.choices[0] as { finish_reason?: string | null; delta?: ChunkDelta | null } | undefined)
      : undefined
    if (choice?.finish_reason != null) finishReason = choice.finish_reason
    const delta = choice?.delta
    if (delta == null) continue
    const thought = delta.reasoning_content ?? delta.reasoning
    if (thought) reasoningDelta(thought)
    for (const part of contentParts(delta.content))
      part.type === 'reasoning' ? reasoningDelta(part.text) : textDelta(part.text)
    if (delta.refusal != null && delta.refusal.length > 0) textDelta(delta.refusal)
    if (delta.tool_calls != null && delta.tool_calls.length > 0) {
      if (reasoning) {
        out.push({ type: 'reasoning-end', id: 'reasoning-0' })
        reasoning = false
      }
      for (const call of delta.tool_calls) toolCallDelta(call)
    }
    for (const part of out) yield part
    out.length = 0
  }
  if (reasoning) out.push({ type: 'reasoning-end', id: 'reasoning-0' })
  if (text) out.push({ type: 'text-end', id: 'txt-0' })
  for (const [index, held] of pending)
    tracker.processDelta({ index, id: held.id, function: { arguments: held.args } } as never)
  pending.clear()
  tracker.flush()
  if (finishReason == null && !failed) {
    out.push({
      type: 'error',
      error: new InvalidResponseDataError({
        data: undefined,
        message: 'Response stream ended without a finish reason.',
      }),
    })
  }
  // The agents read the usage only; the finish reason's mapping is the provider's (not exported).
  out.push({
    type: 'finish',
    finishReason: { unified: finishReason ? 'other' : 'error', raw: finishReason },
    usage: model.convertUsage(usage),
  })
  for (const part of out) yield part
}
