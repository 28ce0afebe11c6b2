import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { defaultKnowledgeBaseDir } from './knowledge-base.content.ts'
import {
  ArticleListQuery,
  ArticleListResponse,
  ArticleParams,
  ArticleResponse,
} from './knowledge-base.schemas.ts'

export interface KnowledgeBaseOptions {
  /** Where the article files are; the shipped content/knowledge-base/ unless a test hands in its own. */
  contentDir?: string
}

/** The read-only knowledge base; the articles are synced from the markdown files as the app starts. */
export default async function knowledgeBaseRoutes(fastify: FastifyInstance, options: KnowledgeBaseOptions) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const articles = app.services.knowledgeBase
  const contentDir = options.contentDir ?? defaultKnowledgeBaseDir
  const tags = ['knowledge base']

  // A bad article file stops the start with a message naming it, as a bad config value does.
  const report = await articles.sync(contentDir)
  app.log.info({ ...report, contentDir }, 'knowledge base synced')

  app.get(
    '/api/knowledge-base',
    {
      config: { auth: 'session' },
      schema: {
        tags,
        querystring: ArticleListQuery,
        response: { 200: ArticleListResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ data: await articles.listArticles(request.query) }),
  )

  app.get(
    '/api/knowledge-base/:slug',
    {
      config: { auth: 'session' },
      schema: { tags, params: ArticleParams, response: { 200: ArticleResponse, ...commonErrorResponses } },
    },
    async (request) => ({ data: await articles.showArticle(request.params.slug) }),
  )
}
