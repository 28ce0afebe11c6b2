import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml } from 'yaml'
import { TEST_APP_KEY } from '../helpers/build-test-app.ts'
import { TestClient } from '../helpers/client.ts'
import { projectRoot } from '../helpers/project-root.ts'
import {
  killServerProcesses,
  migratedDataDir,
  removeTempDirs,
  type ServerProcess,
  startServerProcess,
} from '../helpers/server-process.ts'

// `npm start` with nothing configured for AI: the real process answers the support agent with its
// built-in offline model (knowledge base search, then the article, then a quote of it).
const articlesDir = join(projectRoot, 'content/knowledge-base')

// PGlite's first start in a new folder runs initdb: seconds, more on a busy machine.
const START_DEADLINE_MS = 90_000
const QUESTION = 'How do credit holds work?'

interface Article {
  slug: string
  title: string
  body: string
}

/** The shipped help articles, read straight from their files: slug (file name), title, markdown body. */
function shippedArticles(): Article[] {
  return readdirSync(articlesDir)
    .filter((file) => file.endsWith('.md'))
    .map((file) => {
      const text = readFileSync(join(articlesDir, file), 'utf8')
      const [, yaml = '', body = ''] = text.match(/^---\r?\n([\s\S]*?)\r?\n---\r?\n([\s\S]*)$/) ?? []
      const front = parseYaml(yaml) as { title: string; slug?: string }
      return { slug: front.slug ?? basename(file, '.md'), title: front.title, body }
    })
}

type Chunk = { type: string; [key: string]: any }

/** The `data:` payloads of an SSE answer, in order: JSON chunks, and `[DONE]` as a string. */
function sseData(text: string): Array<Chunk | '[DONE]'> {
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => event.slice('data: '.length))
    .map((data) => (data === '[DONE]' ? data : (JSON.parse(data) as Chunk)))
}

let server: ServerProcess | undefined
let baseUrl = ''

beforeAll(async () => {
  // Only this environment: no AI_* (the offline model), no UPSTREAM_BASE_URL (the in-process
  // simulator), no DATABASE_URL (PGlite under DATA_DIR); a fresh cwd so no .env is read.
  server = await startServerProcess({
    env: { APP_KEY: TEST_APP_KEY, DATA_DIR: migratedDataDir(), LOG_LEVEL: 'warn' },
    upWithinMs: START_DEADLINE_MS,
  })
  baseUrl = server.baseUrl
}, START_DEADLINE_MS + 10_000)

afterAll(async () => {
  // Whatever happened above, the process this file started is gone before the next file runs.
  await killServerProcesses()
  removeTempDirs()
}, 30_000)

describe('node src/server.ts without AI_* settings (the offline model)', () => {
  it('answers the support agent from the help articles: search, open the article, quote it, [DONE]', async () => {
    const articles = shippedArticles()
    const expected = articles.find((article) => /credit holds/i.test(article.title))
    expect(expected, 'a shipped article about credit holds').toBeDefined()
    const article = expected as Article

    const client = new TestClient(baseUrl)
    await client.csrf()
    expect(client.cookies.has('XSRF-TOKEN')).toBe(true)
    const res = await client.post('/api/ai/agents/support', {
      id: 'chat1',
      messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: QUESTION }] }],
      trigger: 'submit-message',
    })
    expect(res.status, res.text).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(res.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1')

    const events = sseData(res.text)
    expect(events.at(-1), res.text).toBe('[DONE]')
    expect(res.text.endsWith('data: [DONE]\n\n')).toBe(true)
    const chunks = events.filter((event): event is Chunk => event !== '[DONE]')
    expect(chunks[0]?.type).toBe('start')
    expect(chunks.at(-1)?.type).toBe('finish')
    expect(chunks.filter((chunk) => chunk.type === 'error')).toEqual([])

    // The search, with the question, and its hits: the credit holds article first.
    const calls = chunks.filter((chunk) => chunk.type === 'tool-input-available')
    expect(calls.map((call) => call.toolName)).toEqual([
      'search_knowledge_base',
      'get_knowledge_base_article',
    ])
    const [search, open] = calls as [Chunk, Chunk]
    expect(search.input).toEqual({ query: QUESTION })
    const outputOf = (call: Chunk) =>
      chunks.find((chunk) => chunk.type === 'tool-output-available' && chunk.toolCallId === call.toolCallId)
        ?.output
    const hits = outputOf(search) as Array<{ slug: string; title: string }>
    expect(hits[0]).toMatchObject({ slug: article.slug, title: article.title })
    // Every hit is a shipped article, under its own title.
    for (const hit of hits) expect(articles.find((a) => a.slug === hit.slug)?.title).toBe(hit.title)

    // The article opened is that hit, and the answer quotes it under its title.
    expect(open.input).toEqual({ slug: article.slug })
    expect(outputOf(open)).toMatchObject({ slug: article.slug, title: article.title })
    const text = chunks
      .filter((chunk) => chunk.type === 'text-delta')
      .map((chunk) => chunk.delta as string)
      .join('')
    expect(text).toContain(`"${article.title}"`)
    const firstParagraph = article.body.trim().split(/\n\s*\n/)[0] as string
    expect(firstParagraph.length).toBeGreaterThan(40)
    expect(text).toContain(firstParagraph)

    // SIGTERM: the process stops cleanly.
    expect(await server?.stop()).toEqual({ code: 0, signal: null })
  }, 60_000)
})
