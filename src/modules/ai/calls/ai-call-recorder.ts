import type { LanguageModelUsage } from 'ai'
import type { Db } from '../../../db/client.ts'
import type { RecordedToolCall } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import type { EventBus } from '../../../lib/events.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'
import { createAiCallsRepository, type NewAiCall } from './ai-calls.repository.ts'

/** The token counts a call records (the SDK's LanguageModelUsage has them, among others). */
export type TokenCounts = Pick<LanguageModelUsage, 'inputTokens' | 'outputTokens'>

/** How a call ended; `reason` is the plain text shown to users and stored (never provider text). */
export type CallEnd =
  | { status: 'completed'; usage: TokenCounts | undefined; messageId?: number | null }
  | { status: 'failed' | 'aborted'; reason: string; willRetry?: boolean }

/** One AI call being made: its row (being written), the tools it ran, and how to close it. */
export interface AiCallHandle {
  toolCalls: RecordedToolCall[]
  steps: number
  /** Records the outcome and emits the event; answers the row's id. */
  end(outcome: CallEnd): Promise<number>
}

/**
 * Records AI calls: a `streaming` row when one starts, its outcome (tokens, tools, duration, masked
 * error) when it ends, and `AiCallCompleted` or `AiCallFailed` (for failures and aborts alike).
 */
/** What a call left `streaming` by a stopped process is recorded as. */
export const INTERRUPTED_REASON = 'The call was interrupted: the server stopped.'

export function createAiCallRecorder({
  db,
  clock,
  events,
}: {
  db: Db
  clock: Clock
  events: EventBus<ServiceEvents>
}) {
  const repo = createAiCallsRepository({ db })
  return {
    /**
     * Closes the rows of calls no process is making any more (their server stopped mid-call): any
     * still `streaming` after `maxAgeMs` (longer than a call may last), as failed. Answers how many.
     */
    closeInterrupted(maxAgeMs: number): Promise<number> {
      const now = clock.now()
      return repo.failStale(new Date(now.getTime() - maxAgeMs), INTERRUPTED_REASON, now)
    },

    /**
     * Starts recording a call. The row is written while the model is already being asked: a
     * database round trip (a queue of them, under load) is not added to the user's wait for the
     * first word. `end` waits for it.
     */
    start(call: Omit<NewAiCall, 'createdAt'>): AiCallHandle {
      const inserted = repo.insert({ ...call, createdAt: clock.now() })
      // Awaited by `end`; until then a failed insert must not count as an unhandled rejection.
      inserted.catch(() => {})
      const started = performance.now()
      const handle: AiCallHandle = {
        toolCalls: [],
        steps: 0,
        async end(outcome) {
          const row = await inserted
          const durationMs = Math.round(performance.now() - started)
          const usage = outcome.status === 'completed' ? outcome.usage : undefined
          const inputTokens = usage?.inputTokens ?? 0
          const outputTokens = usage?.outputTokens ?? 0
          await repo.finish(row.id, {
            status: outcome.status,
            inputTokens,
            outputTokens,
            toolCalls: handle.toolCalls,
            steps: handle.steps,
            durationMs,
            error: outcome.status === 'completed' ? null : outcome.reason,
            finishedAt: clock.now(),
          })
          const base = {
            aiCallId: row.id,
            userId: call.userId,
            groupId: call.groupId ?? null,
            agent: call.source,
          }
          if (outcome.status === 'completed') {
            events.emit('AiCallCompleted', {
              ...base,
              messageId: outcome.messageId ?? null,
              inputTokens,
              outputTokens,
              durationMs,
            })
          } else {
            events.emit('AiCallFailed', {
              ...base,
              status: outcome.status,
              reason: outcome.reason,
              willRetry: outcome.willRetry ?? false,
            })
          }
          return row.id
        },
      }
      return handle
    },
  }
}

export type AiCallRecorder = ReturnType<typeof createAiCallRecorder>
