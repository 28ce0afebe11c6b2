import type { Db } from '../../db/client.ts'
import type { Clock } from '../../lib/clock.ts'
import { notFound } from '../../lib/errors.ts'
import { contentHash, parseArticles, readArticleFiles } from './knowledge-base.content.ts'
import { presentArticle } from './knowledge-base.presenters.ts'
import { type ArticleRow, createKnowledgeBaseRepository } from './knowledge-base.repository.ts'
import { type Article, type ArticleListQuery, SLUG_PATTERN } from './knowledge-base.schemas.ts'

export interface SyncReport {
  added: number
  updated: number
  removed: number
  unchanged: number
  /** Nothing was parsed or written: the files hash as they did at the last sync. */
  skipped: boolean
}

const articleNotFound = () => notFound('Article not found.')

// Words a question is made of that say nothing about its subject; left out of a loose search.
const QUESTION_WORDS = new Set(
  'the and for are but not you your can how what when where why who which does did have has was were will with this that there from into about any our out use using get want need please'.split(
    ' ',
  ),
)

/**
 * The words of `q` (runs of letters and digits, lowercased, at most 32): nothing else of the input
 * reaches to_tsquery, so its syntax cannot be broken. Empty when `q` has no words.
 */
export function searchWords(q: string | undefined): string[] {
  return (q?.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 32)
}

/** The read-only knowledge base, and its sync from the markdown files. */
export function createKnowledgeBaseService({ db, clock }: { db: Db; clock: Clock }) {
  const repo = createKnowledgeBaseRepository({ db })

  /** Articles of `area` (exact) matching `q` (title and content, word prefixes), best match first. */
  async function list({ area, q }: ArticleListQuery): Promise<ArticleRow[]> {
    // An empty `area` (a form's "all areas") filters nothing, as Laravel's `filled()` reads it;
    // one no article can have (spaces, capitals, a NUL byte) matches nothing without a query.
    if (area && !SLUG_PATTERN.test(area)) return []
    return repo.list({ area: area || undefined, words: searchWords(q) })
  }

  async function find(slug: string): Promise<ArticleRow> {
    const article = SLUG_PATTERN.test(slug) ? await repo.findBySlug(slug) : undefined
    if (!article) throw articleNotFound()
    return article
  }

  return {
    list,

    /**
     * A question's best articles, for the assistants: articles holding all its words, or else those
     * holding the most of its telling words (three letters or more, not question words).
     */
    async answersTo(question: string, area?: string): Promise<ArticleRow[]> {
      const exact = await list({ q: question, area })
      if (exact.length > 0 || (area && !SLUG_PATTERN.test(area))) return exact
      const telling = searchWords(question).filter((word) => word.length > 2 && !QUESTION_WORDS.has(word))
      if (telling.length === 0) return []
      return repo.list({ area: area || undefined, words: telling, match: 'any' })
    },

    /** One article by slug; 404 "Article not found." otherwise. */
    find,

    /** The articles `list` finds, as the API shows them. */
    listArticles: async (query: ArticleListQuery): Promise<Article[]> =>
      (await list(query)).map(presentArticle),

    /** The article `find` finds, as the API shows it. */
    showArticle: async (slug: string): Promise<Article> => presentArticle(await find(slug)),

    /**
     * Makes the stored articles match the files under `dir`: added, changed (by source hash) and
     * removed files, all in one transaction. Every file is read and checked before anything is
     * written, so one bad file changes nothing; unchanged files write nothing. When the files (and
     * the parser) hash as they did at the last sync, nothing is parsed, locked or written at all.
     */
    async sync(dir: string): Promise<SyncReport> {
      const files = await readArticleFiles(dir)
      const filesHash = await contentHash(files)
      const skipped: SyncReport = { added: 0, updated: 0, removed: 0, unchanged: files.length, skipped: true }
      if ((await repo.syncedContentHash()) === filesHash) return skipped
      const sources = await parseArticles(files)
      return db.transaction(async (tx) => {
        const txRepo = createKnowledgeBaseRepository({ db: tx })
        await txRepo.lockForSync()
        // Another instance starting at the same time may have synced these files while this one waited.
        if ((await txRepo.syncedContentHash()) === filesHash) return skipped
        const stored = await txRepo.sourceHashes()
        const now = clock.now()
        const report: SyncReport = { added: 0, updated: 0, removed: 0, unchanged: 0, skipped: false }
        for (const source of sources) {
          const storedHash = stored.get(source.slug)
          stored.delete(source.slug)
          if (storedHash === undefined) {
            await txRepo.insert(source, now)
            report.added++
          } else if (storedHash !== source.sourceHash) {
            await txRepo.update(source, now)
            report.updated++
          } else {
            report.unchanged++
          }
        }
        // What is left was stored but has no file any more.
        await txRepo.deleteBySlugs([...stored.keys()])
        report.removed = stored.size
        await txRepo.recordSync(filesHash, now)
        return report
      })
    },
  }
}
export type KnowledgeBaseService = ReturnType<typeof createKnowledgeBaseService>
