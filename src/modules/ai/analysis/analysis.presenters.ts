import type { ChatAttachmentRow } from '../../../db/schema/index.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import { presentAttachment } from '../../chat/chat.presenters.ts'
import type { AnalysisEntry } from '../ai.schemas.ts'
import type { AnalysisListRow } from './analysis.repository.ts'

export function presentAnalysis(
  row: AnalysisListRow,
  files: readonly ChatAttachmentRow[],
  appUrl: string,
): AnalysisEntry {
  const { analysis } = row
  return {
    id: analysis.id,
    status: analysis.status,
    group: { id: analysis.groupId, name: row.groupName },
    question: {
      message_id: analysis.questionMessageId,
      body: row.questionBody,
      author: row.author,
      attachments: files.map((file) => presentAttachment(file, appUrl)),
    },
    answer:
      analysis.answerMessageId !== null && row.answerBody !== null
        ? { message_id: analysis.answerMessageId, body: row.answerBody }
        : null,
    model: analysis.model,
    created_at: laravelDate(analysis.createdAt),
    completed_at: analysis.completedAt ? laravelDate(analysis.completedAt) : null,
  }
}
