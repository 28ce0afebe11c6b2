import type { StepPart } from './agents/model-steps.ts'

/**
 * The UI message stream chunks this service sends: a subset of the AI SDK's, with only the fields
 * that the strict client schemas of ai@5.0.0 and the current ai both know (no `finishReason`, no
 * provider metadata, no `title` or `dynamic`): an unknown key breaks a strict client's stream.
 */
export type UiChunk =
  | { type: 'start'; messageId?: string }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  | { type: 'text-start'; id: string }
  | { type: 'text-delta'; id: string; delta: string }
  | { type: 'text-end'; id: string }
  | { type: 'tool-input-start'; toolCallId: string; toolName: string }
  | { type: 'tool-input-delta'; toolCallId: string; inputTextDelta: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'error'; errorText: string }
  | { type: 'finish' }

/** The headers of a UI message stream (the AI SDK's UI_MESSAGE_STREAM_HEADERS). */
export const UI_STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
} as const

/** One SSE event: `data: <json>` and a blank line; no `event:` or `id:` lines, as the SDK frames it. */
export const sseEvent = (chunk: UiChunk) => `data: ${JSON.stringify(chunk)}\n\n`
export const SSE_DONE = 'data: [DONE]\n\n'

/** What a tool that failed tells the client; the reason stays in the log. */
export const TOOL_FAILED = 'The tool could not be run.'

/**
 * The chunk a model stream part becomes on the wire, or null for parts the client is not sent
 * (reasoning, sources, raw chunks; finish and errors, which the caller writes once it has recorded
 * them; the start of a tool's input, once its call is complete, is sent as `tool-input-available`).
 */
export function toUiChunk(part: StepPart): UiChunk | null {
  switch (part.type) {
    case 'start-step':
      return { type: 'start-step' }
    case 'finish-step':
      return { type: 'finish-step' }
    case 'text-start':
      return { type: 'text-start', id: part.id }
    case 'text-delta':
      return { type: 'text-delta', id: part.id, delta: part.text }
    case 'text-end':
      return { type: 'text-end', id: part.id }
    case 'tool-input-start':
      return { type: 'tool-input-start', toolCallId: part.id, toolName: part.toolName }
    case 'tool-input-delta':
      return { type: 'tool-input-delta', toolCallId: part.id, inputTextDelta: part.delta }
    case 'tool-call':
      return {
        type: 'tool-input-available',
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        input: part.input,
      }
    case 'tool-result':
      return { type: 'tool-output-available', toolCallId: part.toolCallId, output: part.output }
    case 'tool-error':
      return { type: 'tool-output-error', toolCallId: part.toolCallId, errorText: TOOL_FAILED }
    default:
      return null
  }
}
