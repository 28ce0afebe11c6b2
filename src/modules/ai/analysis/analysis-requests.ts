import type { Db } from '../../../db/client.ts'
import type { Outbox } from '../../../plugins/outbox.ts'
import { createAnalysisRepository } from './analysis.repository.ts'

/** The outbox kind of a chat analysis job; its payload is `{ analysisId }`. */
export const ANALYSIS_JOB = 'chat-analysis'

/**
 * Asks for the analysis of a message just posted with `ask_ai`, in the post's transaction: the
 * analysis row and its job exist if and only if the message does.
 */
export async function queueAnalysis(
  tx: Db,
  outbox: Pick<Outbox, 'enqueue'>,
  question: { groupId: number; messageId: number; model: string; at: Date },
): Promise<void> {
  const analysis = await createAnalysisRepository({ db: tx }).insert({
    groupId: question.groupId,
    questionMessageId: question.messageId,
    model: question.model,
    createdAt: question.at,
  })
  await outbox.enqueue(ANALYSIS_JOB, { analysisId: analysis.id }, tx)
}
