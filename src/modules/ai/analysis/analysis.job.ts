import { buffer } from 'node:stream/consumers'
import { type FilePart, generateText, type TextPart } from 'ai'
import type { Db } from '../../../db/client.ts'
import type { ChatAnalysisRow, ChatAttachmentRow } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { describeFailure } from '../../../lib/errors.ts'
import type { EventBus } from '../../../lib/events.ts'
import type { OutboxAttempt } from '../../../lib/outbox/outbox.worker.ts'
import type { FileStorage } from '../../../lib/storage/storage.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'
import { emitAll, messagePosted } from '../../chat/chat.events.ts'
import { appendMessage, lockGroupForPost } from '../../chat/messages/append-message.ts'
import { type AiCallRecorder, INTERRUPTED_REASON } from '../calls/ai-call-recorder.ts'
import type { FeatureMeter } from '../metering.ts'
import type { ConfiguredModel } from '../model.ts'
import { createAnalysisRepository } from './analysis.repository.ts'

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])
export const ANALYSIS_FAILED_TEXT =
  'The AI analysis of this message could not be made. Please ask again later.'
const FAILED_REASON = 'The model could not be reached or gave no answer.'

const INSTRUCTIONS =
  'You are a trading analyst answering in a group chat. Analyse the message and any chart images: trend, ' +
  'levels, patterns and risks, in a few short paragraphs. Say what you cannot tell from what you were given. ' +
  'This is information, not financial advice.'

export interface AnalysisJobDeps {
  db: Db
  clock: Clock
  appUrl: string
  events: EventBus<ServiceEvents>
  storage: FileStorage
  model: ConfiguredModel
  calls: AiCallRecorder
  timeoutMs: number
  log: { warn(obj: object, msg: string): void }
  /** Charges the asker for a completed analysis (src/modules/credits/feature-meter.ts); absent: free. */
  meter?: Pick<FeatureMeter, 'charge'>
}

/** The model input of a question: its text, then its images as file parts (other files are named only). */
async function questionContent(
  storage: FileStorage,
  body: string,
  files: ChatAttachmentRow[],
): Promise<Array<TextPart | FilePart>> {
  const images: FilePart[] = []
  const others: string[] = []
  for (const file of files) {
    const stored = IMAGE_TYPES.has(file.mimeType) ? await storage.open(file.path) : null
    if (stored) images.push({ type: 'file', data: await buffer(stored.stream), mediaType: file.mimeType })
    else others.push(file.name)
  }
  const note = others.length ? `\n\n(Also attached, not shown: ${others.join(', ')}.)` : ''
  return [{ type: 'text', text: `${body || '(no text: the images are the question)'}${note}` }, ...images]
}

/**
 * The outbox handler of a chat analysis: one model call per try; the answer is posted as an
 * `assistant` message in the same transaction that marks the analysis completed, under the row's
 * lock, so a second run (a lease that ran out) can never post a second answer. After the last
 * failed try a `system` message says so and the analysis is `failed`; the question stays.
 */
export function createAnalysisJob(deps: AnalysisJobDeps) {
  const { db, clock, appUrl, events } = deps

  /** Runs `change` on the analysis if it is still pending, posting `message` to its group. */
  async function postOutcome(
    analysis: ChatAnalysisRow,
    kind: 'assistant' | 'system',
    body: string,
  ): Promise<number | null> {
    const posted = await db.transaction(async (tx) => {
      // The group first, then the analysis: the order a message or group deletion (whose cascade
      // reaches the analysis) takes them in, so the two cannot deadlock.
      if (!(await lockGroupForPost(tx, analysis.groupId))) return null
      const repo = createAnalysisRepository({ db: tx })
      const current = await repo.find(analysis.id, { lock: true })
      if (current?.status !== 'pending') return null
      const at = clock.now()
      const message = await appendMessage(
        tx,
        { groupId: analysis.groupId, kind, body, author: null, at },
        appUrl,
      )
      await repo.finish(analysis.id, {
        status: kind === 'assistant' ? 'completed' : 'failed',
        answerMessageId: kind === 'assistant' ? message.id : null,
        at,
      })
      return message
    })
    if (posted) emitAll(events, [messagePosted(posted)])
    return posted?.id ?? null
  }

  return async function runAnalysis(payload: Record<string, unknown>, attempt: OutboxAttempt): Promise<void> {
    const repo = createAnalysisRepository({ db })
    const analysis = await repo.find(Number(payload.analysisId))
    // Withdrawn (its question was deleted) or already settled by another run: nothing to do.
    if (analysis?.status !== 'pending') return
    const question = await repo.question(analysis.questionMessageId)
    if (!question) return

    const call = deps.calls.start({
      userId: question.authorId,
      source: 'analysis',
      groupId: analysis.groupId,
      analysisId: analysis.id,
      model: deps.model.name,
    })
    let text: string
    let usage: Awaited<ReturnType<typeof generateText>>['totalUsage']
    try {
      const result = await generateText({
        model: deps.model.model,
        system: INSTRUCTIONS,
        messages: [
          { role: 'user', content: await questionContent(deps.storage, question.body, question.files) },
        ],
        abortSignal: AbortSignal.any([AbortSignal.timeout(deps.timeoutMs), attempt.signal]),
        // The outbox retries, with backoff.
        maxRetries: 0,
      })
      call.steps = result.steps.length
      text = result.text.trim()
      usage = result.totalUsage
      if (!text) throw new Error('the model answered no text')
    } catch (error) {
      // The instance is stopping: the outbox gives the job back, this try not counted, to the next
      // instance. Nothing is settled, even on the last try, and the group hears nothing.
      if (attempt.signal.aborted) {
        await call.end({ status: 'aborted', reason: INTERRUPTED_REASON, willRetry: true })
        throw error
      }
      deps.log.warn(
        { analysisId: analysis.id, attempt: attempt.number, failure: describeFailure(error) },
        'chat analysis try failed',
      )
      try {
        if (attempt.last) await postOutcome(analysis, 'system', ANALYSIS_FAILED_TEXT)
      } finally {
        await call.end({ status: 'failed', reason: FAILED_REASON, willRetry: !attempt.last })
      }
      throw error
    }
    let messageId: number | null = null
    try {
      messageId = await postOutcome(analysis, 'assistant', text)
    } finally {
      // No answer posted (the question was deleted meanwhile, or another run answered first): the
      // call was for nothing, which is an abort, not a completion to announce.
      const aiCallId = await call.end(
        messageId === null
          ? { status: 'aborted', reason: 'The question was withdrawn or already answered.' }
          : { status: 'completed', usage, messageId },
      )
      // Only the run that posted the answer charges the asker, once (one row per ai_calls row).
      if (messageId !== null && question.authorId !== null) {
        await deps.meter?.charge({ userId: question.authorId, feature: 'ai_analysis', aiCallId })
      }
    }
  }
}
