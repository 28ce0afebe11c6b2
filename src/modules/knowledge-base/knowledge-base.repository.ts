import { and, asc, desc, eq, getTableColumns, inArray, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import {
  knowledgeBaseArticles as articles,
  type KnowledgeBaseArticleRow,
  knowledgeBaseSync,
} from '../../db/schema/index.ts'
import type { ArticleSource } from './knowledge-base.content.ts'

// Any fixed number: instances syncing at the same start take turns instead of racing on slugs.
const SYNC_LOCK = 727_002

// The tsvector and the source hash are bookkeeping, never answered.
const { search: _search, sourceHash: _hash, ...articleColumns } = getTableColumns(articles)

export type ArticleRow = Omit<KnowledgeBaseArticleRow, 'search' | 'sourceHash'>

export interface ArticleFilter {
  area?: string
  /** Letters and digits only; each word matches as a prefix of a word of the title or content. */
  words: string[]
  /** Whether every word must match (the API's search) or any one may (the assistants' fallback). Default all. */
  match?: 'all' | 'any'
}

/**
 * Each word as a prefix, stemmed like the indexed text (`strategies:*` finds "strategy") or as typed,
 * so a stop word still works as a prefix (`the:*` finds "theme"); all words required.
 */
function prefixQuery(words: string[], match: 'all' | 'any'): SQL | undefined {
  if (words.length === 0) return undefined
  const terms = words.map(
    (word) => sql`(to_tsquery('english', ${`${word}:*`}) || to_tsquery('simple', ${`${word}:*`}))`,
  )
  return sql`(${sql.join(terms, match === 'all' ? sql` && ` : sql` || `)})`
}

export function createKnowledgeBaseRepository({ db }: { db: Db }) {
  return {
    /** Matching articles: best full-text match first when searching, else by area and title. */
    async list({ area, words, match = 'all' }: ArticleFilter): Promise<ArticleRow[]> {
      const query = prefixQuery(words, match)
      const conditions: SQL[] = []
      if (area !== undefined) conditions.push(eq(articles.area, area))
      if (query) conditions.push(sql`${articles.search} @@ ${query}`)
      const order = query
        ? [desc(sql`ts_rank_cd(${articles.search}, ${query})`), asc(articles.area), asc(articles.title)]
        : [asc(articles.area), asc(articles.title)]
      return db
        .select(articleColumns)
        .from(articles)
        .where(and(...conditions))
        .orderBy(...order, asc(articles.id))
    },

    async findBySlug(slug: string): Promise<ArticleRow | undefined> {
      const [row] = await db.select(articleColumns).from(articles).where(eq(articles.slug, slug)).limit(1)
      return row
    },

    /** Holds the sync lock until the surrounding transaction ends. */
    async lockForSync(): Promise<void> {
      await db.execute(sql`select pg_advisory_xact_lock(${SYNC_LOCK})`)
    },

    /** The content hash the articles were last synced from; undefined before the first sync. */
    async syncedContentHash(): Promise<string | undefined> {
      const [row] = await db.select({ hash: knowledgeBaseSync.contentHash }).from(knowledgeBaseSync).limit(1)
      return row?.hash
    },

    async recordSync(contentHash: string, now: Date): Promise<void> {
      await db
        .insert(knowledgeBaseSync)
        .values({ contentHash, syncedAt: now })
        .onConflictDoUpdate({ target: knowledgeBaseSync.id, set: { contentHash, syncedAt: now } })
    },

    /** slug -> source hash of every stored article. */
    async sourceHashes(): Promise<Map<string, string>> {
      const rows = await db.select({ slug: articles.slug, hash: articles.sourceHash }).from(articles)
      return new Map(rows.map((row) => [row.slug, row.hash]))
    },

    async insert(source: ArticleSource, now: Date): Promise<void> {
      await db.insert(articles).values({ ...source, createdAt: now, updatedAt: now })
    },

    async update(source: ArticleSource, now: Date): Promise<void> {
      const { slug, ...values } = source
      await db
        .update(articles)
        .set({ ...values, updatedAt: now })
        .where(eq(articles.slug, slug))
    },

    async deleteBySlugs(slugs: string[]): Promise<void> {
      if (slugs.length > 0) await db.delete(articles).where(inArray(articles.slug, slugs))
    },
  }
}
