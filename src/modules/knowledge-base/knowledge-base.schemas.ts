import { type Static, Type } from 'typebox'

/** Slugs and areas: lowercase letters and digits in dash-separated runs. */
export const SLUG_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/

const Slug = Type.String({ minLength: 1, maxLength: 191, pattern: SLUG_PATTERN.source })
const Timestamp = Type.String({ format: 'date-time', examples: ['2024-05-01T12:34:56.000000Z'] })

/** The front matter of an article file under content/knowledge-base/; the markdown after it is the content. */
export const ArticleFrontMatter = Type.Object({
  /** Defaults to the file name without `.md`. */
  slug: Type.Optional(Slug),
  title: Type.String({ minLength: 1, maxLength: 255 }),
  area: Type.String({ minLength: 1, maxLength: 64, pattern: SLUG_PATTERN.source }),
  excerpt: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  route_path: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  component_reference: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  screenshot_filenames: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 255 }))),
  meta: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
export type ArticleFrontMatter = Static<typeof ArticleFrontMatter>

export const Article = Type.Object({
  id: Type.Integer(),
  slug: Type.String(),
  title: Type.String(),
  area: Type.String(),
  content: Type.String({ description: 'Markdown.' }),
  excerpt: Type.Union([Type.String(), Type.Null()]),
  route_path: Type.Union([Type.String(), Type.Null()], {
    description: "The app's route the article is about.",
  }),
  component_reference: Type.Union([Type.String(), Type.Null()]),
  screenshot_filenames: Type.Array(Type.String()),
  meta: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type Article = Static<typeof Article>

export const ArticleListResponse = Type.Object({ data: Type.Array(Article) })
export const ArticleResponse = Type.Object({ data: Article })

// A search longer than this is a mistake, not a question.
export const MAX_QUERY_LENGTH = 200

export const ArticleListQuery = Type.Object({
  area: Type.Optional(Type.String({ maxLength: 64, description: 'Only articles of exactly this area.' })),
  q: Type.Optional(
    Type.String({
      maxLength: MAX_QUERY_LENGTH,
      description: 'Words to find in titles and content (full-text, word prefixes match); best match first.',
    }),
  ),
})
export type ArticleListQuery = Static<typeof ArticleListQuery>

export const ArticleParams = Type.Object({ slug: Type.String() })
