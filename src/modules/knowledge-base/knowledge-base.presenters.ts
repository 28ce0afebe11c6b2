import { laravelDate } from '../../lib/laravel.ts'
import type { ArticleRow } from './knowledge-base.repository.ts'
import type { Article } from './knowledge-base.schemas.ts'

/** An article as the app reads it: every field of the spec's article, snake_case, Laravel dates. */
export function presentArticle(row: ArticleRow): Article {
  return {
    id: row.id,
    slug: row.slug,
    title: row.title,
    area: row.area,
    content: row.content,
    excerpt: row.excerpt,
    route_path: row.routePath,
    component_reference: row.componentReference,
    screenshot_filenames: row.screenshotFilenames,
    meta: row.meta,
    created_at: laravelDate(row.createdAt),
    updated_at: laravelDate(row.updatedAt),
  }
}
