import { and, eq, lt } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import {
  type AiCallRow,
  type AiCallSource,
  type AiCallStatus,
  aiCalls,
  type RecordedToolCall,
} from '../../../db/schema/index.ts'

export interface NewAiCall {
  userId: number | null
  source: AiCallSource
  groupId?: number | null
  analysisId?: number | null
  model: string
  createdAt: Date
}

export interface AiCallOutcome {
  status: Exclude<AiCallStatus, 'streaming'>
  inputTokens: number
  outputTokens: number
  toolCalls: RecordedToolCall[]
  steps: number
  durationMs: number
  error: string | null
  finishedAt: Date
}

/** Every query on `ai_calls`. */
export function createAiCallsRepository({ db }: { db: Db }) {
  return {
    /** A call under way (`streaming`). */
    async insert(call: NewAiCall): Promise<{ id: number }> {
      const [row] = await db
        .insert(aiCalls)
        .values({ ...call, status: 'streaming' })
        .returning({ id: aiCalls.id })
      if (!row) throw new Error('ai_calls insert returned nothing')
      return row
    },

    async finish(id: number, outcome: AiCallOutcome): Promise<void> {
      await db.update(aiCalls).set(outcome).where(eq(aiCalls.id, id))
    },

    /** Marks `streaming` rows started before `before` as failed with `reason`; answers how many. */
    async failStale(before: Date, reason: string, now: Date): Promise<number> {
      const rows = await db
        .update(aiCalls)
        .set({ status: 'failed', error: reason, finishedAt: now })
        .where(and(eq(aiCalls.status, 'streaming'), lt(aiCalls.createdAt, before)))
        .returning({ id: aiCalls.id })
      return rows.length
    },

    async find(id: number): Promise<AiCallRow | undefined> {
      const [row] = await db.select().from(aiCalls).where(eq(aiCalls.id, id))
      return row
    },
  }
}
