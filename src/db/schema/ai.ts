import { sql } from 'drizzle-orm'
import { bigint, check, index, integer, jsonb, pgTable, text, timestamp, varchar } from 'drizzle-orm/pg-core'
import { chatGroups, chatMessages } from './chat.ts'
import { users } from './users.ts'

const at = (name: string) => timestamp(name, { withTimezone: true, precision: 6 })
const id = () => bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity()

/** Who made a call: one of the three agents, or the chat analysis job. */
export const AI_CALL_SOURCES = ['support', 'trading', 'assistant', 'analysis'] as const
export type AiCallSource = (typeof AI_CALL_SOURCES)[number]
export const AI_CALL_STATUSES = ['streaming', 'completed', 'failed', 'aborted'] as const
export type AiCallStatus = (typeof AI_CALL_STATUSES)[number]
export const ANALYSIS_STATUSES = ['pending', 'completed', 'failed'] as const
export type AnalysisStatus = (typeof ANALYSIS_STATUSES)[number]

/** One tool call of an AI call, as recorded: never its input or output, which may hold account data. */
export interface RecordedToolCall {
  name: string
  ok: boolean
  ms: number
}

/**
 * The chat analysis a message posted with `ask_ai` asked for. The question and the answer are chat
 * messages; this row ties them together and says how far the job got (the job itself is an outbox row).
 */
export const chatAnalyses = pgTable(
  'chat_analyses',
  {
    id: id(),
    groupId: bigint('group_id', { mode: 'number' })
      .notNull()
      .references(() => chatGroups.id, { onDelete: 'cascade' }),
    // Deleting the question withdraws the analysis.
    questionMessageId: bigint('question_message_id', { mode: 'number' })
      .notNull()
      .unique()
      .references(() => chatMessages.id, { onDelete: 'cascade' }),
    answerMessageId: bigint('answer_message_id', { mode: 'number' }).references(() => chatMessages.id, {
      onDelete: 'set null',
    }),
    status: varchar('status', { length: 16 }).$type<AnalysisStatus>().notNull(),
    model: varchar('model', { length: 191 }).notNull(),
    createdAt: at('created_at').notNull(),
    completedAt: at('completed_at'),
  },
  (t) => [
    index('chat_analyses_group_id_id_index').on(t.groupId, t.id),
    check('chat_analyses_status_known', sql`${t.status} in ('pending', 'completed', 'failed')`),
  ],
)

/**
 * Every model call: an agent's answer or one try of a chat analysis. Kept when the user is deleted
 * (as usage, without them); `error` is the masked reason, never provider text.
 */
export const aiCalls = pgTable(
  'ai_calls',
  {
    id: id(),
    userId: bigint('user_id', { mode: 'number' }).references(() => users.id, { onDelete: 'set null' }),
    source: varchar('source', { length: 16 }).$type<AiCallSource>().notNull(),
    groupId: bigint('group_id', { mode: 'number' }).references(() => chatGroups.id, { onDelete: 'set null' }),
    analysisId: bigint('analysis_id', { mode: 'number' }).references(() => chatAnalyses.id, {
      onDelete: 'set null',
    }),
    model: varchar('model', { length: 191 }).notNull(),
    status: varchar('status', { length: 16 }).$type<AiCallStatus>().notNull(),
    inputTokens: integer('input_tokens').notNull().default(0),
    outputTokens: integer('output_tokens').notNull().default(0),
    toolCalls: jsonb('tool_calls').$type<RecordedToolCall[]>().notNull().default([]),
    steps: integer('steps').notNull().default(0),
    durationMs: integer('duration_ms'),
    error: text('error'),
    createdAt: at('created_at').notNull(),
    finishedAt: at('finished_at'),
  },
  (t) => [
    index('ai_calls_user_id_id_index').on(t.userId, t.id),
    check('ai_calls_status_known', sql`${t.status} in ('streaming', 'completed', 'failed', 'aborted')`),
  ],
)

export type AiCallRow = typeof aiCalls.$inferSelect
export type ChatAnalysisRow = typeof chatAnalyses.$inferSelect
