import type { LanguageModelUsage } from 'ai'
import type { Db } from '../../../db/client.ts'
import type { RecordedToolCall } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import type { EventBus } from '../../../lib/events.ts'
import type { AppEvents } from '../../../plugins/events.ts'
import { createAiCallsRepository, type NewAiCall } from './ai-calls.repository.ts'

/** How a call ended; `reason` is the plain text shown to users and stored (never provider text). */
export type CallEnd =
  | { status: 'completed'; usage: LanguageModelUsage | undefined; messageId?: number | null }
  | { status: 'failed' | 'aborted'; reason: string; willRetry?: boolean }

/** One AI call being made: its row, the tools it ran, and how to close it. */
export interface AiCallHandle {
  id: number
  toolCalls: RecordedToolCall[]
  steps: number
  end(outcome: CallEnd): Promise<void>
}

/**
 * Records AI calls: a `streaming` row when one starts, its outcome (tokens, tools, duration, masked
 * error) when it ends, and `AiCallCompleted` or `AiCallFailed` (for failures and aborts alike).
 */
export function createAiCallRecorder({
  db,
  clock,
  events,
}: {
  db: Db
  clock: Clock
  events: EventBus<AppEvents>
}) {
  const repo = createAiCallsRepository({ db })
  return {
    async start(call: Omit<NewAiCall, 'createdAt'>): Promise<AiCallHandle> {
      const row = await repo.insert({ ...call, createdAt: clock.now() })
      const started = performance.now()
      const handle: AiCallHandle = {
        id: row.id,
        toolCalls: [],
        steps: 0,
        async end(outcome) {
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
          const base = { aiCallId: row.id, userId: row.userId, groupId: row.groupId, agent: row.source }
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
              reason: outcome.reason,
              willRetry: outcome.willRetry ?? false,
            })
          }
        },
      }
      return handle
    },
  }
}

export type AiCallRecorder = ReturnType<typeof createAiCallRecorder>
