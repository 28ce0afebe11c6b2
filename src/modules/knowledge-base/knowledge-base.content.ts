import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { compileValidator, type FieldErrors } from '../../lib/validation.ts'
import { ArticleFrontMatter, SLUG_PATTERN } from './knowledge-base.schemas.ts'

/** The articles shipped with the service. */
export const defaultKnowledgeBaseDir = fileURLToPath(
  new URL('../../../content/knowledge-base', import.meta.url),
)

/** One article file, parsed and checked, ready to be stored. */
export interface ArticleSource {
  slug: string
  title: string
  area: string
  content: string
  excerpt: string | null
  routePath: string | null
  componentReference: string | null
  screenshotFilenames: string[]
  meta: Record<string, unknown>
  /** A hash of everything above, so a sync rewrites only articles whose source changed. */
  sourceHash: string
}

/** Content that cannot be synced; the message names the file (or folder) and the problem. */
export class KnowledgeBaseContentError extends Error {
  readonly path: string
  constructor(path: string, message: string) {
    super(message)
    this.path = path
  }

  static article(file: string, problem: string): KnowledgeBaseContentError {
    return new KnowledgeBaseContentError(file, `Knowledge base article ${file}: ${problem}`)
  }
}

// Compiled on first use: a start whose articles did not change parses none.
let checkFrontMatter: ((value: unknown) => FieldErrors) | undefined
const knownFields = new Set(Object.keys(ArticleFrontMatter.properties))

/** Splits `---\n<yaml>\n---\n<markdown>`; null when the file does not open with front matter. */
function splitFrontMatter(text: string): { yaml: string; body: string } | null {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  if (lines[0]?.trim() !== '---') return null
  const end = lines.findIndex((line, i) => i > 0 && (line.trim() === '---' || line.trim() === '...'))
  if (end === -1) return null
  return { yaml: lines.slice(1, end).join('\n'), body: lines.slice(end + 1).join('\n') }
}

/** Parses one article file; throws KnowledgeBaseContentError naming `file` when it is not a valid article. */
function parseArticle(file: string, text: string, parseYaml: (yaml: string) => unknown): ArticleSource {
  const fail = (problem: string) => KnowledgeBaseContentError.article(file, problem)
  // PostgreSQL text cannot hold it; better named here than failing the insert.
  if (text.includes('\u0000')) throw fail('contains a NUL byte.')
  const parts = splitFrontMatter(text)
  if (!parts) throw fail('has no front matter (a YAML block between two "---" lines at the top).')
  let data: unknown
  try {
    data = parseYaml(parts.yaml)
  } catch (error) {
    throw fail(`the front matter is not valid YAML: ${(error as Error).message.split('\n')[0]}`)
  }
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    throw fail('the front matter must be a mapping of fields (title, area, ...).')
  }
  const unknown = Object.keys(data).filter((key) => !knownFields.has(key))
  if (unknown.length > 0) throw fail(`unknown front matter field(s): ${unknown.join(', ')}.`)
  checkFrontMatter ??= compileValidator(ArticleFrontMatter)
  const problems = checkFrontMatter(data)
  const listed = Object.entries(problems).flatMap(([field, messages]) =>
    messages.map((m) => `${field}: ${m}`),
  )
  if (listed.length > 0) throw fail(listed.join(' '))
  const front = data as ArticleFrontMatter

  const slug = front.slug ?? basename(file).replace(/\.md$/i, '')
  if (!SLUG_PATTERN.test(slug) || slug.length > 191) {
    throw fail(
      `"${slug}" is not a usable slug (lowercase letters, digits and single dashes); set one in front matter.`,
    )
  }
  const content = parts.body.trim()
  if (content === '') throw fail('has no content after the front matter.')

  const article = {
    slug,
    title: front.title,
    area: front.area,
    content,
    excerpt: front.excerpt ?? null,
    routePath: front.route_path ?? null,
    componentReference: front.component_reference ?? null,
    screenshotFilenames: front.screenshot_filenames ?? [],
    meta: front.meta ?? {},
  }
  const sourceHash = createHash('sha256').update(JSON.stringify(article)).digest('hex')
  return { ...article, sourceHash }
}

/** One article file as read: its path, and its path under the articles' folder. */
export interface ArticleFile {
  file: string
  name: string
  text: string
}

/** Every `*.md` under `dir` (sub-folders too), in path order, read but not parsed. */
export async function readArticleFiles(dir: string): Promise<ArticleFile[]> {
  let names: string[]
  try {
    names = await readdir(dir, { recursive: true })
  } catch (error) {
    throw new KnowledgeBaseContentError(
      dir,
      `Knowledge base folder ${dir} cannot be read: ${(error as Error).message}`,
    )
  }
  const files = names.filter((n) => n.toLowerCase().endsWith('.md')).sort()
  return Promise.all(
    files.map(async (name) => {
      const file = join(dir, name)
      return { file, name, text: await readFile(file, 'utf8') }
    }),
  )
}

// What turns files into rows; a change to either may change the rows of unchanged files.
const parserSources = [import.meta.url, new URL('./knowledge-base.schemas.ts', import.meta.url).href]

/**
 * A hash of the articles as files (each path under the folder and its bytes) and of the code that
 * parses them: equal hashes mean a sync would store exactly what the last one stored.
 */
export async function contentHash(files: ArticleFile[]): Promise<string> {
  const hash = createHash('sha256')
  for (const source of parserSources) {
    hash.update(await readFile(fileURLToPath(source)))
    hash.update('\0')
  }
  for (const { name, text } of files) hash.update(`${name}\0${text.length}\0${text}\0`)
  return hash.digest('hex')
}

/** Parses read files; throws on the first bad file or a repeated slug. */
export async function parseArticles(files: ArticleFile[]): Promise<ArticleSource[]> {
  // Loaded here: a start whose articles did not change parses none.
  const { parse: parseYaml } = await import('yaml')
  const bySlug = new Map<string, { article: ArticleSource; file: string }>()
  for (const { file, text } of files) {
    const article = parseArticle(file, text, parseYaml)
    const clash = bySlug.get(article.slug)
    if (clash)
      throw KnowledgeBaseContentError.article(
        file,
        `its slug "${article.slug}" is already used by ${clash.file}.`,
      )
    bySlug.set(article.slug, { article, file })
  }
  return [...bySlug.values()].map(({ article }) => article)
}
