import { Type } from 'typebox'
import { HttpError } from '../../../lib/errors.ts'
import { MAX_QUERY_LENGTH } from '../../knowledge-base/knowledge-base.schemas.ts'
import type { KnowledgeBaseService } from '../../knowledge-base/knowledge-base.service.ts'
import { define, ToolRefusal } from './tool-definition.ts'

/** Search results name and describe articles; the model fetches the one it wants in full. */
const SEARCH_RESULTS = 5

/** `search_knowledge_base` and `get_knowledge_base_article`, for every agent, signed in or not. */
export function knowledgeBaseTools(articles: KnowledgeBaseService) {
  return [
    define<{ query: string; area?: string }>({
      name: 'search_knowledge_base',
      description:
        "Searches the trading app's help articles (full text). Answers the best matches: slug, title, area, excerpt.",
      input: Type.Object({
        query: Type.String({ minLength: 1, maxLength: MAX_QUERY_LENGTH, description: 'Words to look for.' }),
        area: Type.Optional(Type.String({ maxLength: 64, description: 'Only articles of this area.' })),
      }),
      async run({ query, area }) {
        const rows = await articles.answersTo(query, area)
        return rows.slice(0, SEARCH_RESULTS).map((row) => ({
          slug: row.slug,
          title: row.title,
          area: row.area,
          excerpt: row.excerpt,
        }))
      },
    }),
    define<{ slug: string }>({
      name: 'get_knowledge_base_article',
      description: 'One help article in full (markdown), by the slug a search answered.',
      input: Type.Object({ slug: Type.String({ minLength: 1, maxLength: 191 }) }),
      async run({ slug }) {
        try {
          const row = await articles.find(slug)
          return { slug: row.slug, title: row.title, area: row.area, content: row.content }
        } catch (error) {
          if (error instanceof HttpError && error.status === 404)
            throw new ToolRefusal('No article has that slug.')
          throw error
        }
      },
    }),
  ]
}
