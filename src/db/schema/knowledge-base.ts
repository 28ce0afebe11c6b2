import { type SQL, sql } from 'drizzle-orm'
import {
  bigint,
  check,
  customType,
  index,
  jsonb,
  pgTable,
  smallint,
  text,
  timestamp,
  varchar,
} from 'drizzle-orm/pg-core'

const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' })

/** Product articles, synced from content/knowledge-base/*.md; `search` is maintained by PostgreSQL. */
export const knowledgeBaseArticles = pgTable(
  'knowledge_base_articles',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    slug: varchar('slug', { length: 191 }).notNull().unique(),
    title: varchar('title', { length: 255 }).notNull(),
    area: varchar('area', { length: 64 }).notNull(),
    content: text('content').notNull(),
    excerpt: text('excerpt'),
    routePath: varchar('route_path', { length: 255 }),
    componentReference: varchar('component_reference', { length: 255 }),
    screenshotFilenames: jsonb('screenshot_filenames').$type<string[]>().notNull().default([]),
    meta: jsonb('meta').$type<Record<string, unknown>>().notNull().default({}),
    // A hash of the source file, so a sync rewrites only what changed.
    sourceHash: varchar('source_hash', { length: 64 }).notNull(),
    // Title words weigh more than body words in the ranking.
    search: tsvector('search')
      .notNull()
      .generatedAlwaysAs(
        (): SQL =>
          sql`setweight(to_tsvector('english', coalesce(${knowledgeBaseArticles.title}, '')), 'A') || setweight(to_tsvector('english', coalesce(${knowledgeBaseArticles.content}, '')), 'B')`,
      ),
    createdAt: timestamp('created_at', { withTimezone: true, precision: 6 }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [
    index('knowledge_base_articles_area_index').on(t.area),
    index('knowledge_base_articles_search_index').using('gin', t.search),
  ],
)

/**
 * The last sync, one row: a hash of the article files (and of the code parsing them) the articles
 * were last synced from. A start whose files hash the same skips the sync and writes nothing.
 */
export const knowledgeBaseSync = pgTable(
  'knowledge_base_sync',
  {
    id: smallint('id').primaryKey().default(1),
    contentHash: varchar('content_hash', { length: 64 }).notNull(),
    syncedAt: timestamp('synced_at', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [check('knowledge_base_sync_one_row', sql`${t.id} = 1`)],
)

export type KnowledgeBaseArticleRow = typeof knowledgeBaseArticles.$inferSelect
export type NewKnowledgeBaseArticleRow = typeof knowledgeBaseArticles.$inferInsert
