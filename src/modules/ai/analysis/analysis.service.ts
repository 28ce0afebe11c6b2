import type { Db } from '../../../db/client.ts'
import { type LengthAwarePage, paginate } from '../../../lib/laravel.ts'
import type { AnalysisEntry, AnalysisQuery } from '../ai.schemas.ts'
import { presentAnalysis } from './analysis.presenters.ts'
import { createAnalysisRepository } from './analysis.repository.ts'

export const DEFAULT_ANALYSIS_PER_PAGE = 15

/** The chat analyses a user may read: those of the groups they belong to, newest first. */
export function createAnalysisService({ db, appUrl }: { db: Db; appUrl: string }) {
  const repo = createAnalysisRepository({ db })

  async function entries(userId: number, limit: number, offset: number): Promise<AnalysisEntry[]> {
    const rows = await repo.pageFor(userId, limit, offset)
    const files = await repo.attachmentsOf(rows.map((row) => row.analysis.questionMessageId))
    return rows.map((row) =>
      presentAnalysis(
        row,
        files.filter((file) => file.messageId === row.analysis.questionMessageId),
        appUrl,
      ),
    )
  }

  return {
    /** `GET /api/analysis`: Laravel's paginator JSON; a chosen page size is kept in the links. */
    async list(userId: number, query: AnalysisQuery, path: string): Promise<LengthAwarePage<AnalysisEntry>> {
      const perPage = query.per_page ?? DEFAULT_ANALYSIS_PER_PAGE
      const page = query.page ?? 1
      const [total, data] = await Promise.all([
        repo.countFor(userId),
        entries(userId, perPage, (page - 1) * perPage),
      ])
      return paginate({ data, total, page, perPage, path, requestedPerPage: query.per_page })
    },

    /** The newest `limit` entries (the assistant's `list_analysis` tool). */
    latest: (userId: number, limit: number) => entries(userId, limit, 0),
  }
}

export type AnalysisService = ReturnType<typeof createAnalysisService>
