import type { ModelMessage } from 'ai'
import type { UserRow } from '../../../db/schema/index.ts'
import { describeFailure, ValidationError } from '../../../lib/errors.ts'
import type { AgentBody, AgentName } from '../ai.schemas.ts'
import { MAX_CHAT_TEXT_BYTES } from '../ai.schemas.ts'
import type { AiCallRecorder, CallEnd } from '../calls/ai-call-recorder.ts'
import { modelStreamOpener } from '../lean-chat-stream.ts'
import type { AiFeature, FeatureMeter, FeatureReservation } from '../metering.ts'
import type { ConfiguredModel } from '../model.ts'
import { type Toolbox, toolNamesFor } from '../tools/toolbox.ts'
import { toUiChunk, type UiChunk } from '../ui-stream.ts'
import { AGENT_INSTRUCTIONS } from './agent-prompts.ts'
import { streamSteps } from './model-steps.ts'

/** A tool result goes back to the model, which may call another: at most this many model calls an answer. */
export const MAX_STEPS = 5

export const FAILED_TEXT = 'The assistant could not answer just now. Please try again.'
export const TIMED_OUT_TEXT = 'The assistant took too long to answer. Please try again.'
export const INTERRUPTED_TEXT = 'The assistant was interrupted: the server is restarting. Please try again.'

/** Where an answer goes: chunks in order, and the client's going away. */
export interface AnswerSink {
  write(chunk: UiChunk): void | Promise<void>
  /** Aborts when the client disconnects. */
  signal: AbortSignal
}

export interface AgentLogger {
  warn(obj: object, msg: string): void
}

/** A question ready to send: who asks which agent, and the conversation as model messages. */
export interface AgentQuestion {
  agent: AgentName
  user: UserRow | null
  requestId: string
  messages: ModelMessage[]
  /** The answer's cost set aside for a signed-in user of a metered agent; absent when it is free. */
  reservation?: FeatureReservation
}

/** The catalogue feature an agent's answer is for a signed-in user; the support agent is free. */
export const AGENT_FEATURES: Record<AgentName, AiFeature | null> = {
  trading: 'ai_trading_agent',
  assistant: 'ai_assistant',
  support: null,
}

const textOf = (parts: AgentBody['messages'][number]['parts']) =>
  parts
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text as string)
    .join('\n')

/**
 * The conversation as the model sees it: the text of each user and assistant message. Tool parts of
 * earlier answers are left out, so what the model takes for a tool result always came from a tool.
 */
function toModelMessages(body: AgentBody): ModelMessage[] {
  let bytes = 0
  const messages: ModelMessage[] = []
  for (const message of body.messages) {
    const text = textOf(message.parts)
    bytes += Buffer.byteLength(text)
    if (text.trim()) messages.push({ role: message.role, content: text })
  }
  if (bytes > MAX_CHAT_TEXT_BYTES) {
    throw ValidationError.withMessages({
      messages: [
        `The messages may not hold more than ${MAX_CHAT_TEXT_BYTES / 1024} kilobytes of text in all.`,
      ],
    })
  }
  const last = body.messages.at(-1)
  if (last?.role !== 'user' || !textOf(last.parts).trim()) {
    throw ValidationError.withMessages({ messages: ['The last message must be a user message with text.'] })
  }
  return messages
}

/**
 * The three assistant agents: one streamed model call per question, with the agent's tools for
 * who is asking, recorded in `ai_calls` from start to end whatever happens to it.
 */
export function createAgentsService(deps: {
  model: ConfiguredModel
  toolbox: Toolbox
  calls: AiCallRecorder
  edition: 'standard' | 'pro'
  timeoutMs: number
  /** Aborts when the server stops serving streams (app.shutdown.closing): answers under way end then. */
  stopping: AbortSignal
  log: AgentLogger
  /** Charges a signed-in user's answers (src/modules/credits/feature-meter.ts); absent: all free. */
  meter?: Pick<FeatureMeter, 'reserve'>
}) {
  const { model, toolbox, calls, log } = deps
  const open = modelStreamOpener(model.model)

  /** Streams the answer; a completed one charges the question's reservation. */
  async function answerOnce(question: AgentQuestion, sink: AnswerSink): Promise<void> {
    const call = calls.start({
      userId: question.user?.id ?? null,
      source: question.agent,
      model: model.name,
    })
    const timeout = AbortSignal.timeout(deps.timeoutMs)
    const names = toolNamesFor(question.agent, question.user !== null, deps.edition)
    const tools = toolbox.toolSet(
      names,
      { user: question.user, requestId: question.requestId },
      call.toolCalls,
    )
    let usage: Extract<CallEnd, { status: 'completed' }>['usage']
    let failure: unknown
    let finished = false

    await sink.write({ type: 'start' })
    try {
      // No retries (a failed call is the user's to retry), and failures are recorded and logged
      // below, masked.
      const parts = streamSteps({
        open,
        system: AGENT_INSTRUCTIONS[question.agent],
        messages: question.messages,
        tools,
        maxSteps: MAX_STEPS,
        abortSignal: AbortSignal.any([sink.signal, timeout, deps.stopping]),
      })
      for await (const part of parts) {
        if (part.type === 'finish-step') call.steps++
        if (part.type === 'finish') {
          usage = part.totalUsage
          finished = true
        }
        if (part.type === 'error') failure ??= part.error
        const chunk = toUiChunk(part)
        if (chunk && !sink.signal.aborted) await sink.write(chunk)
      }
    } catch (error) {
      failure ??= error
    }

    if (sink.signal.aborted) {
      await call.end({ status: 'aborted', reason: 'The client went away.' })
      return
    }
    // A stop ends the answer as cleanly as a failure does (the client sees an error, then the
    // end), but it is recorded as cut short, not as a model failure.
    if (deps.stopping.aborted && !finished) {
      await sink.write({ type: 'error', errorText: INTERRUPTED_TEXT })
      await sink.write({ type: 'finish' })
      await call.end({ status: 'aborted', reason: INTERRUPTED_TEXT })
      return
    }
    if (failure !== undefined || !finished) {
      const reason = timeout.aborted ? TIMED_OUT_TEXT : FAILED_TEXT
      await sink.write({ type: 'error', errorText: reason })
      await sink.write({ type: 'finish' })
      const aiCallId = await call.end({ status: 'failed', reason })
      // The code and message only: a provider error object also carries the whole prompt.
      log.warn({ aiCallId, agent: question.agent, failure: describeFailure(failure) }, 'AI call failed')
      return
    }
    await sink.write({ type: 'finish' })
    const aiCallId = await call.end({ status: 'completed', usage })
    // Only a completed answer is charged, once, before the stream ends.
    await question.reservation?.charge(aiCallId)
  }

  return {
    /**
     * Checks a request body and turns it into a question; for a signed-in user of a metered agent,
     * sets the answer's cost aside, or refuses with a 422 on `credits` when their spendable credits
     * do not cover it. A 422 here comes before any stream starts, and before the model is asked.
     */
    async prepare(
      agent: AgentName,
      user: UserRow | null,
      requestId: string,
      body: AgentBody,
    ): Promise<AgentQuestion> {
      const messages = toModelMessages(body)
      const feature = AGENT_FEATURES[agent]
      const reservation =
        user && feature && deps.meter ? await deps.meter.reserve(user.id, feature, 'credits') : undefined
      return { agent, user, requestId, messages, reservation }
    },

    /**
     * Streams the answer into `sink`, ending with `finish` (after an `error` chunk if it failed).
     * A failed or aborted answer charges nothing: its cost set aside is released.
     */
    async answer(question: AgentQuestion, sink: AnswerSink): Promise<void> {
      try {
        await answerOnce(question, sink)
      } finally {
        question.reservation?.release()
      }
    },
  }
}

export type AgentsService = ReturnType<typeof createAgentsService>
