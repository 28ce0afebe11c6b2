import type {
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolResultOutput,
} from '@ai-sdk/provider'
import {
  asSchema,
  InvalidToolInputError,
  JSONParseError,
  type ModelMessage,
  NoSuchToolError,
  type ToolSet,
  TypeValidationError,
} from 'ai'
import type { OpenModelStream } from '../lean-chat-stream.ts'

/** What an answer's steps stream: the parts of streamText's fullStream that the agents use. */
export type StepPart =
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; text: string }
  | { type: 'text-end'; id: string }
  | { type: 'tool-input-start'; id: string; toolName: string }
  | { type: 'tool-input-delta'; id: string; delta: string }
  | { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-result'; toolCallId: string; toolName: string; output: unknown }
  | { type: 'tool-error'; toolCallId: string; toolName: string; error: unknown }
  | { type: 'finish'; totalUsage: { inputTokens: number | undefined; outputTokens: number | undefined } }
  | { type: 'error'; error: unknown }

export interface StepsOptions {
  /** Opens one model call's stream (lean-chat-stream.ts). */
  open: OpenModelStream
  system: string
  messages: ModelMessage[]
  tools: ToolSet
  maxSteps: number
  abortSignal: AbortSignal
}

/** An error as the SDK hands it to the model (provider-utils' getErrorMessage). */
const errorText = (error: unknown): string =>
  error == null
    ? 'unknown error'
    : typeof error === 'string'
      ? error
      : error instanceof Error
        ? error.toString()
        : JSON.stringify(error)

/** A tool's output as plain JSON, as the SDK hands it to the model (toJSONValue). */
function toJSONValue(value: unknown): unknown {
  if (value === undefined) return null
  const serialized = JSON.stringify(value)
  return serialized === undefined ? null : JSON.parse(serialized)
}

const addTokens = (a: number | undefined, b: number | undefined) =>
  a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0)

/** The conversation as the provider takes it (the SDK's convertToLanguageModelPrompt, for text messages). */
function toPrompt(system: string, messages: ModelMessage[]): LanguageModelV4Message[] {
  const prompt: LanguageModelV4Message[] = [{ role: 'system', content: system }]
  for (const message of messages) {
    if (typeof message.content !== 'string') throw new Error('only text messages are asked')
    if (message.role === 'user' || message.role === 'assistant')
      prompt.push({ role: message.role, content: [{ type: 'text', text: message.content }] })
  }
  return prompt
}

/** The tools as the provider takes them (the SDK's prepareTools, for function tools). */
async function toProviderTools(tools: ToolSet): Promise<LanguageModelV4FunctionTool[] | undefined> {
  const entries = Object.entries(tools)
  if (entries.length === 0) return undefined
  return Promise.all(
    entries.map(async ([name, tool]) => ({
      type: 'function' as const,
      name,
      inputSchema: (await asSchema(tool.inputSchema)
        .jsonSchema) as LanguageModelV4FunctionTool['inputSchema'],
      ...(typeof tool.description === 'string' ? { description: tool.description } : {}),
    })),
  )
}

type ParsedCall = { valid: true; input: unknown } | { valid: false; input: unknown; error: unknown }

/** A tool call's input checked as the SDK's parseToolCall does: a known tool, JSON, its schema. */
async function parseCall(tools: ToolSet, toolName: string, text: string): Promise<ParsedCall> {
  const tool = Object.hasOwn(tools, toolName) ? tools[toolName] : undefined
  let raw: unknown = text
  try {
    if (!tool) throw new NoSuchToolError({ toolName, availableTools: Object.keys(tools) })
    if (text.trim() !== '') {
      try {
        raw = JSON.parse(text)
      } catch (cause) {
        throw new InvalidToolInputError({
          toolName,
          toolInput: text,
          cause: new JSONParseError({ text, cause }),
        })
      }
    } else raw = {}
    const checked = await asSchema(tool.inputSchema).validate?.(raw)
    if (checked && !checked.success) {
      throw new InvalidToolInputError({
        toolName,
        toolInput: text,
        cause: TypeValidationError.wrap({ value: raw, cause: checked.error }),
      })
    }
    return { valid: true, input: checked ? checked.value : raw }
  } catch (error) {
    let input: unknown = text
    try {
      input = JSON.parse(text)
    } catch {}
    return { valid: false, input, error }
  }
}

/**
 * One answer's model calls, as streamText runs them with `stopWhen: stepCountIs(maxSteps)`, but
 * consuming each call's parts directly: streamText's chain of web-stream transforms costs more
 * main-thread time per chunk than everything else the service does for it (docs/performance.md).
 * The same provider request, the same parts in the same order, the same tool-call checking and the
 * same tool results handed back to the model; a step with tool calls that all answered is followed
 * by another, up to `maxSteps`.
 */
export async function* streamSteps(options: StepsOptions): AsyncGenerator<StepPart> {
  const { open, tools, abortSignal } = options
  const prompt = toPrompt(options.system, options.messages)
  const providerTools = await toProviderTools(tools)
  let inputTokens: number | undefined
  let outputTokens: number | undefined

  for (let step = 1; ; step++) {
    let stream: AsyncIterable<LanguageModelV4StreamPart>
    try {
      stream = await open({
        prompt,
        tools: providerTools,
        toolChoice: { type: 'auto' },
        abortSignal,
        includeRawChunks: false,
      })
    } catch (error) {
      yield { type: 'error', error }
      return
    }

    const texts = new Map<string, string>()
    const calls: Array<{ toolCallId: string; toolName: string; input: unknown; invalid: boolean }> = []
    const outputs = new Map<string, LanguageModelV4ToolResultOutput>()
    // Tool results are handed on as they come, between the model's parts, as streamText does.
    const ready: StepPart[] = []
    const running: Promise<void>[] = []
    let failed = false
    let finished = false
    let started = false

    const run = (toolCallId: string, toolName: string, input: unknown) => {
      const tool = tools[toolName] as NonNullable<ToolSet[string]>
      running.push(
        (async () => {
          try {
            const output = await tool.execute?.(
              input as never,
              {
                toolCallId,
                messages: options.messages,
                abortSignal,
              } as never,
            )
            outputs.set(
              toolCallId,
              typeof output === 'string'
                ? { type: 'text', value: output }
                : { type: 'json', value: toJSONValue(output) as never },
            )
            ready.push({ type: 'tool-result', toolCallId, toolName, output })
          } catch (error) {
            outputs.set(toolCallId, { type: 'error-text', value: errorText(error) })
            ready.push({ type: 'tool-error', toolCallId, toolName, error })
          }
        })(),
      )
    }

    try {
      for await (const part of stream) {
        while (ready.length > 0) yield ready.shift() as StepPart
        // As streamText: a step starts with the model's first part after its stream-start.
        if (!started && part.type !== 'stream-start') {
          started = true
          yield { type: 'start-step' }
        }
        switch (part.type) {
          case 'text-start':
            texts.set(part.id, '')
            yield { type: 'text-start', id: part.id }
            break
          case 'text-delta':
            texts.set(part.id, (texts.get(part.id) ?? '') + part.delta)
            yield { type: 'text-delta', id: part.id, text: part.delta }
            break
          case 'text-end':
            yield { type: 'text-end', id: part.id }
            break
          case 'tool-input-start':
            yield { type: 'tool-input-start', id: part.id, toolName: part.toolName }
            break
          case 'tool-input-delta':
            yield { type: 'tool-input-delta', id: part.id, delta: part.delta }
            break
          case 'tool-call': {
            const parsed = await parseCall(tools, part.toolName, part.input)
            const { toolCallId, toolName } = part
            calls.push({ toolCallId, toolName, input: parsed.input, invalid: !parsed.valid })
            yield { type: 'tool-call', toolCallId, toolName, input: parsed.input }
            if (parsed.valid) run(toolCallId, toolName, parsed.input)
            else {
              outputs.set(toolCallId, { type: 'error-text', value: errorText(parsed.error) })
              yield { type: 'tool-error', toolCallId, toolName, error: parsed.error }
            }
            break
          }
          case 'finish':
            inputTokens = addTokens(inputTokens, part.usage.inputTokens.total)
            outputTokens = addTokens(outputTokens, part.usage.outputTokens.total)
            finished = true
            break
          case 'error':
            failed = true
            yield { type: 'error', error: part.error }
            break
        }
      }
    } catch (error) {
      yield { type: 'error', error }
      return
    }
    await Promise.all(running)
    while (ready.length > 0) yield ready.shift() as StepPart
    if (!finished) return
    yield { type: 'finish-step' }

    const more = !failed && calls.length > 0 && step < options.maxSteps && !abortSignal.aborted
    if (!more) {
      yield { type: 'finish', totalUsage: { inputTokens, outputTokens } }
      return
    }
    // The next call sees this step as the SDK's toResponseMessages hands it on.
    prompt.push({
      role: 'assistant',
      content: [
        ...[...texts.values()].filter((text) => text !== '').map((text) => ({ type: 'text' as const, text })),
        ...calls.map(({ toolCallId, toolName, input, invalid }) => ({
          type: 'tool-call' as const,
          toolCallId,
          toolName,
          input: invalid && typeof input !== 'object' ? {} : input,
        })),
      ],
    })
    prompt.push({
      role: 'tool',
      content: calls.map(({ toolCallId, toolName }) => ({
        type: 'tool-result' as const,
        toolCallId,
        toolName,
        output: outputs.get(toolCallId) as LanguageModelV4ToolResultOutput,
      })),
    })
  }
}
