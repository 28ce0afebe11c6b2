import { randomBytes } from 'node:crypto'
import { and, asc, eq, sql } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../../test/helpers/build-test-app.ts'
import { createGroup, joinGroup, postMessage, recordEvents } from '../../../../test/helpers/chat.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { connected, echoFor, eventually, settle } from '../../../../test/helpers/echo.ts'
import { createUser, signedInClient } from '../../../../test/helpers/factories.ts'
import { freePort } from '../../../../test/helpers/ports.ts'
import { openTestDatabase, sharedDatabase } from '../../../../test/helpers/test-database.ts'
import { appUnderTest, fakeModelUnderTest } from '../../../../test/helpers/under-test.ts'
import type { Database, Db } from '../../../db/client.ts'
import { aiCalls, chatAnalyses, outbox } from '../../../db/schema/index.ts'
import { INTERRUPTED_REASON } from '../calls/ai-call-recorder.ts'
import { ANALYSIS_FAILED_TEXT } from './analysis.job.ts'
import { ANALYSIS_JOB } from './analysis-requests.ts'

// "Analysis in chat": a message posted with `ask_ai` is answered 201 at once; the outbox job asks the
// model (text + chart images), posts the answer as an `assistant` message and lists it in
// GET /api/analysis. Every model call goes to a real OpenAI-compatible HTTP server (FakeModel).

const MODEL = 'fake-analyst-1'
const RETRY_MS = 1_000
const FAILED_REASON = 'The model could not be reached or gave no answer.'

/** A real 1x1 PNG (signature, IHDR, IDAT, IEND with valid CRCs). */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
)
const PDF = Buffer.from('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')

/** The AI_* settings of an app whose model server is at `url` (and a quick close of its sockets). */
const aiEnv = (url: string, extra: Record<string, string> = {}) => ({
  REVERB_DRAIN_SECONDS: '0.1',
  AI_BASE_URL: url,
  AI_API_KEY: 'test-model-key',
  AI_MODEL: MODEL,
  AI_TIMEOUT_MS: '10000',
  AI_JOB_ATTEMPTS: '3',
  AI_JOB_RETRY_MS: String(RETRY_MS),
  ...extra,
})

const echoes: { disconnect(): void }[] = []
/** Closes every Echo tab, before their app closes (an app waits for open sockets to drain). */
const closeTabs = () => {
  for (const echo of echoes.splice(0)) echo.disconnect()
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

interface FormFile {
  name: string
  type: string
  bytes: Buffer
}

/** POSTs /api/message as a multipart form (FormData, as the app sends files), with the session. */
async function postForm(client: TestClient, fields: Record<string, string>, files: FormFile[]) {
  if (!client.cookies.has('XSRF-TOKEN')) await client.csrf()
  const form = new FormData()
  for (const [key, value] of Object.entries(fields)) form.append(key, value)
  for (const file of files)
    form.append('attachments[]', new Blob([file.bytes], { type: file.type }), file.name)
  const res = await fetch(`${client.baseUrl}/api/message`, {
    method: 'POST',
    body: form,
    headers: {
      accept: 'application/json',
      origin: client.origin,
      cookie: client.cookieHeader,
      'x-xsrf-token': decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? ''),
    },
  })
  return { status: res.status, data: (await res.json()) as any }
}

/** Posts a JSON message with `ask_ai: true`; answers the message as presented. */
async function ask(client: TestClient, groupId: number, body: string) {
  const res = await client.post('/api/message', { group_id: groupId, body, ask_ai: true })
  if (res.status !== 201) throw new Error(`ask_ai post answered ${res.status} ${res.text}`)
  return res.data.data as { id: number; group_id: number; kind: string; body: string }
}

interface ChatMessage {
  id: number
  group_id: number
  kind: 'user' | 'assistant' | 'system'
  user: { id: number; name: string } | null
  body: string
  attachments: unknown[]
  created_at: string
}

/** The group's newest messages as a member sees them (GET /api/group/{id}). */
async function messagesOf(client: TestClient, groupId: number): Promise<ChatMessage[]> {
  const res = await client.get(`/api/group/${groupId}`)
  if (res.status !== 200) throw new Error(`group view answered ${res.status} ${res.text}`)
  return res.data.data.messages
}

const ofKind = (messages: ChatMessage[], kind: ChatMessage['kind']) => messages.filter((m) => m.kind === kind)

/** GET /api/analysis as `client`. */
const analyses = (client: TestClient, query = '') => client.get(`/api/analysis${query}`)

/** The analysis row asked for by a question message. */
async function analysisOf(db: Db, questionMessageId: number) {
  const [row] = await db
    .select()
    .from(chatAnalyses)
    .where(eq(chatAnalyses.questionMessageId, questionMessageId))
  return row
}

/** The ai_calls rows of an analysis, oldest first. */
const callsOf = (db: Db, analysisId: number) =>
  db.select().from(aiCalls).where(eq(aiCalls.analysisId, analysisId)).orderBy(asc(aiCalls.id))

/** The outbox row of an analysis's job. */
async function jobOf(db: Db, analysisId: number) {
  const rows = await db
    .select()
    .from(outbox)
    .where(and(eq(outbox.kind, ANALYSIS_JOB), sql`${outbox.payload}->>'analysisId' = ${String(analysisId)}`))
  expect(rows).toHaveLength(1)
  return rows[0] as NonNullable<(typeof rows)[number]>
}

/** A signed-in user pays for an AI market analysis (docs/credits.md): these have plenty. */
const PAYING = { credits: 1000 }

/** An owner's public group with `names.length` further members; each is a signed-in client. */
async function room(t: TestApp, ...names: string[]) {
  const owner = await signedInClient(t, { name: 'Olivia', ...PAYING })
  const group = await createGroup(owner.client, { name: `Charts ${randomBytes(3).toString('hex')}` })
  const members = []
  for (const name of names) {
    const member = await signedInClient(t, { name, ...PAYING })
    await joinGroup(member.client, group.id)
    members.push(member)
  }
  return { owner, group, members }
}

/**
 * A member's browser tab listening on the group's private channel with Laravel Echo; records every
 * event with Echo's own naming (the `App\Events\` namespace stripped, so `AiCallCompleted` here means
 * the wire name was exactly `App\Events\AiCallCompleted`).
 */
async function listenOnGroup(t: TestApp, client: TestClient, groupId: number) {
  const echo = echoFor(t, client)
  echoes.push(echo)
  await connected(echo)
  const heard: { name: string; data: any }[] = []
  let subscribed = false
  echo
    .private(`chat.group.${groupId}`)
    .subscribed(() => {
      subscribed = true
    })
    .listenToAll((name: string, data: unknown) => heard.push({ name, data }))
  await eventually(() => subscribed)
  return {
    heard,
    of: (name: string) => heard.filter((event) => event.name === name).map((event) => event.data),
  }
}

/** Signs in an existing user through the app at `baseUrl`. */
async function signInAt(baseUrl: string, email: string, password: string) {
  const client = new TestClient(baseUrl)
  const res = await client.post('/api/login', { email, password })
  if (res.status !== 200) throw new Error(`login through ${baseUrl} answered ${res.status} ${res.text}`)
  return client
}

const NOTHING = { sent: 0, retried: 0, failed: 0 }

// ---------------------------------------------------------------------------------------------
// One instance, one model server
// ---------------------------------------------------------------------------------------------

describe('analysis in chat on one instance', () => {
  const model = fakeModelUnderTest()
  const t = appUnderTest(() => ({ env: aiEnv(model.url) }))
  afterAll(() => {
    closeTabs()
  })
  beforeEach(() => model.reset())

  describe('POST /api/message with ask_ai', () => {
    it('answers 201 at once, sends the text and the chart image to the model, posts the answer once', async () => {
      const { group, members } = await room(t, 'Max', 'Lena')
      const [asker, listener] = members as [
        Awaited<ReturnType<typeof signedInClient>>,
        Awaited<ReturnType<typeof signedInClient>>,
      ]
      const tab = await listenOnGroup(t, listener.client, group.id)
      const recorder = recordEvents(t.app, ['SocketMessage', 'AiCallCompleted', 'AiCallFailed'])
      const answer = 'Higher highs since March; support at 187, resistance at 199. Not financial advice.'
      // The model takes a while: the post must not wait for it.
      model.reply({ text: answer, delayMs: 800 })

      const posted = await postForm(
        asker.client,
        { group_id: String(group.id), body: 'Is this a breakout?', ask_ai: 'true' },
        [
          { name: 'chart.png', type: 'image/png', bytes: PNG },
          { name: 'report.pdf', type: 'application/pdf', bytes: PDF },
        ],
      )
      expect(posted.status).toBe(201)
      const question = posted.data.data
      expect(question).toMatchObject({
        group_id: group.id,
        kind: 'user',
        user: { id: asker.user.id, name: 'Max' },
        body: 'Is this a breakout?',
      })
      expect(question.attachments.map((a: { name: string }) => a.name)).toEqual(['chart.png', 'report.pdf'])
      // Answered while the model is still thinking: the analysis is pending, no answer yet.
      const pending = await analyses(asker.client)
      expect(pending.data.data).toMatchObject([
        { status: 'pending', answer: null, completed_at: null, question: { message_id: question.id } },
      ])
      expect(ofKind(await messagesOf(asker.client, group.id), 'assistant')).toEqual([])

      await t.app.outbox.drain()

      // Exactly one model request: the system prompt, then the question with its one image.
      expect(model.requests).toHaveLength(1)
      const request = model.requests[0]
      expect(request?.path).toBe('/v1/chat/completions')
      expect(request?.headers.authorization).toBe('Bearer test-model-key')
      expect(request?.body.model).toBe(MODEL)
      const messages = request?.body.messages ?? []
      expect(messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user'])
      const content = messages[1].content as any[]
      expect(content.map((part) => part.type)).toEqual(['text', 'image_url'])
      expect(content[0].text).toContain('Is this a breakout?')
      // The PDF is named, never sent.
      expect(content[0].text).toContain('report.pdf')
      const url: string = content[1].image_url.url
      const [prefix, base64] = url.split(',') as [string, string]
      expect(prefix).toBe('data:image/png;base64')
      expect(Buffer.from(base64, 'base64').equals(PNG)).toBe(true)

      // The answer is an assistant message in the group, after the question.
      const after = await messagesOf(asker.client, group.id)
      const assistant = ofKind(after, 'assistant')
      expect(assistant).toEqual([
        {
          id: expect.any(Number),
          group_id: group.id,
          kind: 'assistant',
          user: null,
          body: answer,
          attachments: [],
          created_at: expect.stringMatching(/Z$/),
        },
      ])
      const reply = assistant[0] as ChatMessage
      expect(reply.id).toBeGreaterThan(question.id)
      expect(after.find((m) => m.id === question.id)).toEqual(question)

      // App events: the question's and the answer's SocketMessage, one AiCallCompleted, no failure.
      const sockets = recorder.of('SocketMessage').filter((e) => e.groupId === group.id)
      expect(sockets.map((e) => e.messageId)).toEqual([question.id, reply.id])
      expect(sockets[1]).toEqual({ messageId: reply.id, senderId: null, groupId: group.id, message: reply })
      expect(recorder.of('AiCallCompleted')).toEqual([
        {
          aiCallId: expect.any(Number),
          userId: asker.user.id,
          groupId: group.id,
          messageId: reply.id,
          agent: 'analysis',
          inputTokens: expect.any(Number),
          outputTokens: expect.any(Number),
          durationMs: expect.any(Number),
        },
      ])
      expect(recorder.of('AiCallFailed')).toEqual([])
      const completed = recorder.of('AiCallCompleted')[0]

      // Another member's tab hears the assistant message and AiCallCompleted, each once.
      await eventually(() => tab.of('AiCallCompleted').length > 0)
      await eventually(() => tab.of('SocketMessage').some((e) => e.message.id === reply.id))
      await settle(300)
      expect(tab.of('AiCallCompleted')).toEqual([
        { ai_call_id: completed?.aiCallId, group_id: group.id, message_id: reply.id },
      ])
      expect(tab.of('SocketMessage').filter((e) => e.message.id === reply.id)).toEqual([{ message: reply }])
      expect(tab.of('AiCallFailed')).toEqual([])

      // The try is recorded; the job is done.
      const row = await analysisOf(t.database.db, question.id)
      expect(row).toMatchObject({ status: 'completed', answerMessageId: reply.id, model: MODEL })
      const calls = await callsOf(t.database.db, row?.id ?? 0)
      expect(calls).toMatchObject([
        { id: completed?.aiCallId, status: 'completed', source: 'analysis', model: MODEL, error: null },
      ])
      expect((await jobOf(t.database.db, row?.id ?? 0)).sentAt).not.toBeNull()

      // A second drain does nothing more.
      expect(await t.app.outbox.drain()).toEqual(NOTHING)
      expect(model.requests).toHaveLength(1)
      expect(await messagesOf(asker.client, group.id)).toEqual(after)
      expect(recorder.of('AiCallCompleted')).toHaveLength(1)
      expect(recorder.events.filter((e) => e.name === 'SocketMessage')).toHaveLength(2)
      recorder.stop()
    })

    it('queues nothing for a message without ask_ai (or with ask_ai false)', async () => {
      const { group, members } = await room(t, 'Max')
      const [member] = members as [Awaited<ReturnType<typeof signedInClient>>]
      const plain = await postMessage(member.client, group.id, 'Just chatting')
      const no = await member.client.post('/api/message', {
        group_id: group.id,
        body: 'No AI',
        ask_ai: false,
      })
      expect(no.status).toBe(201)
      await t.app.outbox.drain()
      expect(model.requests).toEqual([])
      expect(await analysisOf(t.database.db, plain.id)).toBeUndefined()
      expect(await analysisOf(t.database.db, no.data.data.id)).toBeUndefined()
      expect((await analyses(member.client)).data).toMatchObject({ total: 0, data: [] })
      expect(ofKind(await messagesOf(member.client, group.id), 'assistant')).toEqual([])
    })
  })

  describe('GET /api/analysis', () => {
    it('lists the analysis to the members of its group, by membership now, and to nobody else', async () => {
      const { owner, group, members } = await room(t, 'Max')
      const [asker] = members as [Awaited<ReturnType<typeof signedInClient>>]
      const outsider = await signedInClient(t, { name: 'Nina' })
      model.reply({ text: 'A clean cup and handle.' })
      const posted = await postForm(
        asker.client,
        { group_id: String(group.id), body: 'What pattern is this?', ask_ai: 'true' },
        [{ name: 'chart.png', type: 'image/png', bytes: PNG }],
      )
      expect(posted.status).toBe(201)
      const question = posted.data.data
      await t.app.outbox.drain()
      const reply = ofKind(await messagesOf(asker.client, group.id), 'assistant')[0] as ChatMessage
      expect(reply.body).toBe('A clean cup and handle.')

      const entry = {
        id: expect.any(Number),
        status: 'completed',
        group: { id: group.id, name: group.name },
        question: {
          message_id: question.id,
          body: 'What pattern is this?',
          author: { id: asker.user.id, name: 'Max' },
          attachments: [
            {
              id: expect.any(Number),
              name: 'chart.png',
              mime_type: 'image/png',
              size: PNG.length,
              url: `${t.config.appUrl}/api/message/${question.id}/attachments/${question.attachments[0].id}`,
            },
          ],
        },
        answer: { message_id: reply.id, body: 'A clean cup and handle.' },
        model: MODEL,
        created_at: question.created_at,
        completed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      }
      for (const client of [asker.client, owner.client]) {
        const res = await analyses(client)
        expect(res.status).toBe(200)
        expect(res.data).toMatchObject({ current_page: 1, per_page: 15, total: 1, from: 1, to: 1 })
        expect(res.data.data).toEqual([entry])
      }
      // The listed attachment URL serves the uploaded bytes.
      const listed = (await analyses(owner.client)).data.data[0].question.attachments[0].url as string
      const file = await fetch(listed.replace(t.config.appUrl, t.baseUrl), {
        headers: { cookie: owner.client.cookieHeader },
      })
      expect(file.status).toBe(200)
      expect(Buffer.from(await file.arrayBuffer()).equals(PNG)).toBe(true)

      // A signed-in non-member sees nothing, though the group is public.
      const hidden = await analyses(outsider.client)
      expect(hidden.status).toBe(200)
      expect(hidden.data).toMatchObject({ total: 0, data: [], from: null, to: null })
      // Membership now, not when it was asked: joining shows it, leaving hides it again.
      await joinGroup(outsider.client, group.id)
      expect((await analyses(outsider.client)).data.data).toEqual([entry])
      expect((await outsider.client.delete(`/api/group/${group.id}/leave`)).status).toBe(200)
      expect((await analyses(outsider.client)).data).toMatchObject({ total: 0, data: [] })

      // Guests are not let in.
      const guest = await analyses(new TestClient(t.baseUrl))
      expect(guest.status).toBe(401)
      expect(guest.data).toEqual({ message: 'Unauthenticated.' })
    })

    it.each(['0', '51', 'abc'])('refuses per_page=%s with 422', async (perPage) => {
      const { owner } = await room(t)
      const res = await analyses(owner.client, `?per_page=${perPage}`)
      expect(res.status).toBe(422)
      expect(Object.keys(res.data.errors)).toEqual(['per_page'])
    })

    it('pages newest first and keeps per_page in the links', async () => {
      const { group, members } = await room(t, 'Max')
      const [asker] = members as [Awaited<ReturnType<typeof signedInClient>>]
      model.defaultReply({ text: 'Noted.' })
      const asked = []
      for (const body of ['first?', 'second?', 'third?']) asked.push(await ask(asker.client, group.id, body))
      await t.app.outbox.drain()
      expect(model.requests).toHaveLength(3)
      const base = `${t.config.appUrl}/api/analysis`

      const first = await analyses(asker.client, '?per_page=2')
      expect(first.status).toBe(200)
      expect(first.data).toMatchObject({
        current_page: 1,
        per_page: 2,
        total: 3,
        last_page: 2,
        from: 1,
        to: 2,
        path: base,
        first_page_url: `${base}?per_page=2&page=1`,
        next_page_url: `${base}?per_page=2&page=2`,
        last_page_url: `${base}?per_page=2&page=2`,
        prev_page_url: null,
      })
      expect(first.data.data.map((e: any) => e.question.body)).toEqual(['third?', 'second?'])
      const numbered = first.data.links.filter(
        (link: { page?: number | null }) => typeof link.page === 'number',
      )
      expect(numbered.map((link: { url: string }) => link.url)).toContain(`${base}?per_page=2&page=2`)
      for (const link of first.data.links) if (link.url) expect(link.url).toContain('per_page=2')

      const second = await analyses(asker.client, '?per_page=2&page=2')
      expect(second.data).toMatchObject({ current_page: 2, total: 3, from: 3, to: 3, next_page_url: null })
      expect(second.data.data.map((e: any) => e.question.body)).toEqual(['first?'])
      expect(second.data.data[0]).toMatchObject({ status: 'completed', answer: { body: 'Noted.' } })
      const all = [...first.data.data, ...second.data.data]
      expect(all.map((e: any) => e.question.message_id)).toEqual(asked.map((m) => m.id).reverse())
      const ids = all.map((e: any) => e.id as number)
      expect(ids).toEqual([...ids].sort((a, b) => b - a))
    })
  })

  describe('when the model is down', () => {
    it('retries with backoff, then fails: a system message, AiCallFailed announced once, the question kept', async () => {
      const { group, members } = await room(t, 'Max', 'Lena')
      const [asker, listener] = members as [
        Awaited<ReturnType<typeof signedInClient>>,
        Awaited<ReturnType<typeof signedInClient>>,
      ]
      const tab = await listenOnGroup(t, listener.client, group.id)
      const recorder = recordEvents(t.app, ['SocketMessage', 'AiCallCompleted', 'AiCallFailed'])
      model.defaultReply({ status: 500 })

      const question = await ask(asker.client, group.id, 'Where is support?')
      const analysis = await analysisOf(t.database.db, question.id)
      expect(analysis?.status).toBe('pending')
      const id = analysis?.id ?? 0

      // Try 1 fails; the retry is not due until the clock moves past the backoff.
      await t.app.outbox.drain()
      expect(model.requests).toHaveLength(1)
      expect(await t.app.outbox.drain()).toEqual(NOTHING)
      expect(model.requests).toHaveLength(1)
      expect((await jobOf(t.database.db, id)).attempts).toBe(1)
      expect((await analyses(asker.client)).data.data[0]).toMatchObject({ status: 'pending', answer: null })
      expect(ofKind(await messagesOf(asker.client, group.id), 'system').map((m) => m.body)).not.toContain(
        ANALYSIS_FAILED_TEXT,
      )

      // Try 2, after the first delay (base, jittered up to x1.2).
      t.clock.advance(RETRY_MS * 1.2 + 10)
      await t.app.outbox.drain()
      expect(model.requests).toHaveLength(2)
      // Try 3 (the last), after the doubled delay.
      t.clock.advance(RETRY_MS * 2 * 1.2 + 10)
      await t.app.outbox.drain()
      expect(model.requests).toHaveLength(3)
      // Given up: never a fourth try.
      t.clock.advance(RETRY_MS * 100)
      expect(await t.app.outbox.drain()).toEqual(NOTHING)
      expect(model.requests).toHaveLength(3)
      const job = await jobOf(t.database.db, id)
      expect(job).toMatchObject({ attempts: 3, sentAt: null })
      expect(job.failedAt).not.toBeNull()

      // Listed as failed, with no answer.
      const [entry] = (await analyses(asker.client)).data.data
      expect(entry).toMatchObject({
        id,
        status: 'failed',
        answer: null,
        question: { message_id: question.id },
      })
      expect(entry.completed_at).toEqual(expect.stringMatching(/Z$/))

      // One system message says so; the question is untouched; no assistant message.
      const messages = await messagesOf(asker.client, group.id)
      const notices = ofKind(messages, 'system').filter((m) => m.body === ANALYSIS_FAILED_TEXT)
      expect(notices).toHaveLength(1)
      expect(ANALYSIS_FAILED_TEXT).toMatch(/could not be made/)
      expect(ofKind(messages, 'assistant')).toEqual([])
      expect(messages.find((m) => m.id === question.id)).toEqual(question)

      // Three failed ai_calls rows, with the plain reason.
      const calls = await callsOf(t.database.db, id)
      expect(calls.map((c) => [c.status, c.source, c.error])).toEqual([
        ['failed', 'analysis', FAILED_REASON],
        ['failed', 'analysis', FAILED_REASON],
        ['failed', 'analysis', FAILED_REASON],
      ])
      expect(calls.every((c) => c.finishedAt !== null && c.groupId === group.id)).toBe(true)

      // AiCallFailed on every try; only the last says it will not be retried.
      const failed = recorder.of('AiCallFailed')
      expect(failed.map((e) => e.willRetry)).toEqual([true, true, false])
      expect(failed.map((e) => e.aiCallId)).toEqual(calls.map((c) => c.id))
      for (const e of failed) {
        expect(e).toMatchObject({
          groupId: group.id,
          userId: asker.user.id,
          agent: 'analysis',
          reason: FAILED_REASON,
        })
      }
      expect(recorder.of('AiCallCompleted')).toEqual([])
      const notice = notices[0] as ChatMessage
      expect(recorder.of('SocketMessage').map((e) => e.messageId)).toEqual([question.id, notice.id])

      // The group channel hears the failure once (not the tries that were retried), and the notice.
      await eventually(() => tab.of('AiCallFailed').length > 0)
      await eventually(() => tab.of('SocketMessage').some((e) => e.message.id === notice.id))
      await settle(300)
      expect(tab.of('AiCallFailed')).toEqual([
        { ai_call_id: calls[2]?.id, group_id: group.id, reason: FAILED_REASON },
      ])
      expect(tab.of('AiCallCompleted')).toEqual([])
      recorder.stop()
    })
  })

  describe('deleting the question', () => {
    it('withdraws the analysis before its job runs: no model call, no answer, no entry', async () => {
      // Keep the analysis lane busy with another group's question (the model is slow to answer
      // it), so the second question's job waits in the outbox while it is deleted.
      const busy = await room(t, 'Ben')
      const [ben] = busy.members as [Awaited<ReturnType<typeof signedInClient>>]
      const { group, members } = await room(t, 'Max')
      const [asker] = members as [Awaited<ReturnType<typeof signedInClient>>]
      const recorder = recordEvents(t.app, ['SocketMessage', 'AiCallCompleted', 'AiCallFailed'])
      model.reply({ text: 'Busy answer.', delayMs: 1_500 })
      await ask(ben.client, busy.group.id, 'Keep the lane busy')
      await model.waitForRequests(1)

      const question = await ask(asker.client, group.id, 'Withdrawn question')
      const analysis = await analysisOf(t.database.db, question.id)
      expect(analysis?.status).toBe('pending')
      expect((await analyses(asker.client)).data).toMatchObject({ total: 1 })
      expect((await asker.client.delete(`/api/message/${question.id}`)).status).toBe(200)
      // The entry is gone at once.
      expect((await analyses(asker.client)).data).toMatchObject({ total: 0, data: [] })
      expect(model.requests).toHaveLength(1)

      await t.app.outbox.drain()
      expect(await t.app.outbox.drain()).toEqual(NOTHING)
      // Only the busy question reached the model.
      expect(model.requests).toHaveLength(1)
      expect(JSON.stringify(model.requests[0]?.body.messages)).not.toContain('Withdrawn question')
      expect(ofKind(await messagesOf(ben.client, busy.group.id), 'assistant')).toHaveLength(1)

      // Nothing was posted in the withdrawn question's group, nothing recorded for it.
      const messages = await messagesOf(asker.client, group.id)
      expect(messages.filter((m) => m.kind !== 'system' || m.body === ANALYSIS_FAILED_TEXT)).toEqual([])
      const inGroup = recorder.events.filter((e) => 'groupId' in e.payload && e.payload.groupId === group.id)
      expect(inGroup.map((e) => e.name)).toEqual(['SocketMessage'])
      expect(await analysisOf(t.database.db, question.id)).toBeUndefined()
      expect(await callsOf(t.database.db, analysis?.id ?? 0)).toEqual([])
      // Its job ended quietly: done, not failed, not waiting to be retried.
      const job = await jobOf(t.database.db, analysis?.id ?? 0)
      expect(job.sentAt).not.toBeNull()
      expect(job.failedAt).toBeNull()
      expect(job.attempts).toBe(1)
      recorder.stop()
    })

    it('drops an answer whose question was deleted while the model worked: the call is aborted, nothing is announced', async () => {
      const { owner, group, members } = await room(t, 'Ann')
      const [asker] = members as [Awaited<ReturnType<typeof signedInClient>>]
      const tab = await listenOnGroup(t, owner.client, group.id)
      const recorder = recordEvents(t.app, ['AiCallCompleted', 'AiCallFailed'])
      model.reply({ text: 'An answer nobody wants any more.', delayMs: 800 })
      const question = await ask(asker.client, group.id, 'Delete me while you think')
      await model.waitForRequests(1)
      expect((await asker.client.delete(`/api/message/${question.id}`)).status).toBe(200)

      await t.app.outbox.drain()
      await settle()
      expect(ofKind(await messagesOf(owner.client, group.id), 'assistant')).toEqual([])
      const calls = await t.database.db.select().from(aiCalls).where(eq(aiCalls.groupId, group.id))
      expect(calls.map((call) => call.status)).toEqual(['aborted'])
      expect(
        recorder.events.map((event) => [event.name, 'status' in event.payload && event.payload.status]),
      ).toEqual([['AiCallFailed', 'aborted']])
      expect(tab.of('AiCallCompleted')).toEqual([])
      expect(tab.of('AiCallFailed')).toEqual([])
      recorder.stop()
    })
  })
})

// ---------------------------------------------------------------------------------------------
// Several instances on one database
// ---------------------------------------------------------------------------------------------

describe('analysis jobs across instances', () => {
  const model = fakeModelUnderTest()
  let database: Database
  const apps: TestApp[] = []
  const redisUrl = process.env.TEST_REDIS_URL

  beforeAll(async () => {
    database = await openTestDatabase()
  })
  afterAll(async () => {
    closeTabs()
    for (const app of apps.reverse()) await app.close().catch(() => {})
    await database?.close()
  })
  beforeEach(() => model.reset())

  /** An instance on the shared database. */
  async function instance(env: Record<string, string>, redis: Redis | null = null) {
    const app = await buildTestApp({ env, database: sharedDatabase(database), redis })
    apps.push(app)
    return app
  }

  it('takes up after a restart a job whose first try failed, and completes it exactly once', async () => {
    const deadPort = await freePort()
    const a = await instance(aiEnv(`http://127.0.0.1:${deadPort}/v1`, { AI_JOB_RETRY_MS: '60000' }))
    const { user: owner, password } = await createUser(database.db, { name: 'Olivia', ...PAYING })
    const ownerAtA = await signInAt(a.baseUrl, owner.email, password)
    const group = await createGroup(ownerAtA)
    const failures = recordEvents(a.app, ['AiCallFailed', 'AiCallCompleted'])

    const question = await ask(ownerAtA, group.id, 'Survive a restart?')
    await a.app.outbox.drain()
    const analysis = await analysisOf(database.db, question.id)
    const id = analysis?.id ?? 0
    expect(analysis?.status).toBe('pending')
    expect(failures.of('AiCallFailed').map((e) => e.willRetry)).toEqual([true])
    expect(failures.of('AiCallCompleted')).toEqual([])
    expect(await jobOf(database.db, id)).toMatchObject({ attempts: 1, sentAt: null, failedAt: null })
    failures.stop()
    await a.close()

    const b = await instance(aiEnv(model.url, { AI_JOB_RETRY_MS: '60000' }))
    const recorder = recordEvents(b.app, ['AiCallCompleted', 'AiCallFailed'])
    model.reply({ text: 'Answered after the restart.' })
    // B's start-up pass and a drain leave the job alone while its retry is not due.
    expect(await b.app.outbox.drain()).toEqual(NOTHING)
    expect(model.requests).toEqual([])
    // Past the longest first delay (60 s x 1.2) plus however long ago A's clock started.
    b.clock.advance(2 * 60_000)
    await b.app.outbox.drain()
    expect(model.requests).toHaveLength(1)
    expect(JSON.stringify(model.requests[0]?.body.messages)).toContain('Survive a restart?')

    const ownerAtB = await signInAt(b.baseUrl, owner.email, password)
    const assistant = ofKind(await messagesOf(ownerAtB, group.id), 'assistant')
    expect(assistant.map((m) => m.body)).toEqual(['Answered after the restart.'])
    expect(await analysisOf(database.db, question.id)).toMatchObject({
      status: 'completed',
      answerMessageId: assistant[0]?.id,
    })
    const [entry] = (await analyses(ownerAtB)).data.data
    expect(entry).toMatchObject({ id, status: 'completed', answer: { body: 'Answered after the restart.' } })
    expect((await callsOf(database.db, id)).map((c) => c.status)).toEqual(['failed', 'completed'])
    expect(recorder.of('AiCallCompleted').map((e) => e.messageId)).toEqual([assistant[0]?.id])
    expect(recorder.of('AiCallFailed')).toEqual([])
    expect(await jobOf(database.db, id)).toMatchObject({ attempts: 2, failedAt: null })

    // Nothing runs again, however much later.
    b.clock.advance(60 * 60_000)
    expect(await b.app.outbox.drain()).toEqual(NOTHING)
    expect(model.requests).toHaveLength(1)
    expect(ofKind(await messagesOf(ownerAtB, group.id), 'assistant')).toHaveLength(1)
    recorder.stop()
    await b.close()
  })

  it('cuts the model call of a try under way when its instance stops, and leaves the job to the next one, uncounted', async () => {
    // One try only, and a model call allowed a minute: only an interrupted try lets the stop be quick,
    // and only an uncounted one leaves the job a try.
    const env = aiEnv(model.url, { AI_JOB_ATTEMPTS: '1', AI_TIMEOUT_MS: '60000' })
    const a = await instance(env)
    const { user: owner, password } = await createUser(database.db, { name: 'Olivia', ...PAYING })
    const ownerAtA = await signInAt(a.baseUrl, owner.email, password)
    const group = await createGroup(ownerAtA)
    const atA = recordEvents(a.app, ['AiCallFailed', 'AiCallCompleted', 'SocketMessage'])
    model.reply({ hang: true })
    const question = await ask(ownerAtA, group.id, 'Still there after the stop?')
    await model.waitForRequests(1)

    const stopping = Date.now()
    await a.close()
    // Not held for the model call: its grace (a second), then the call is cut.
    expect(Date.now() - stopping).toBeLessThan(5_000)
    await eventually(() => model.requests[0]?.aborted === true)
    const analysis = await analysisOf(database.db, question.id)
    const id = analysis?.id ?? 0
    // Pending, with no failure posted though it was the last try, and due again at once, untried.
    expect(analysis?.status).toBe('pending')
    const job = await jobOf(database.db, id)
    expect(job).toMatchObject({ attempts: 0, sentAt: null, failedAt: null, lastError: null })
    expect(job.availableAt.getTime()).toBeLessThanOrEqual(a.clock.nowMs())
    expect(await callsOf(database.db, id)).toMatchObject([
      { status: 'aborted', error: INTERRUPTED_REASON, finishedAt: expect.any(Date) },
    ])
    expect(atA.of('AiCallFailed')).toMatchObject([
      { status: 'aborted', reason: INTERRUPTED_REASON, willRetry: true },
    ])
    expect(atA.of('AiCallCompleted')).toEqual([])
    expect(atA.of('SocketMessage').map((event) => event.messageId)).toEqual([question.id])
    atA.stop()

    // The next instance takes the job up at its start and answers it, with the one try it has.
    model.reply({ text: 'Answered by the next instance.' })
    const b = await instance(env)
    await b.app.outbox.drain()
    expect(model.requests).toHaveLength(2)
    const ownerAtB = await signInAt(b.baseUrl, owner.email, password)
    const messages = await messagesOf(ownerAtB, group.id)
    expect(ofKind(messages, 'assistant').map((m) => m.body)).toEqual(['Answered by the next instance.'])
    expect(ofKind(messages, 'system').map((m) => m.body)).not.toContain(ANALYSIS_FAILED_TEXT)
    expect(await analysisOf(database.db, question.id)).toMatchObject({ status: 'completed' })
    expect((await callsOf(database.db, id)).map((c) => c.status)).toEqual(['aborted', 'completed'])
    expect(await jobOf(database.db, id)).toMatchObject({ attempts: 1, failedAt: null })
    await b.close()
  })

  it('runs each job once when two instances drain at the same time', async () => {
    // With a Redis the two instances also share real-time: a tab on C hears every answer, whoever ran it.
    const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
    const shared = {
      REVERB_APP_ID: `app-${randomBytes(3).toString('hex')}`,
      REVERB_APP_KEY: `key-${randomBytes(8).toString('hex')}`,
      REVERB_APP_SECRET: randomBytes(24).toString('hex'),
    }
    const redis = () => (redisUrl ? new Redis(redisUrl, { keyPrefix }) : null)
    const c = await instance({ ...aiEnv(model.url), ...shared }, redis())
    const d = await instance({ ...aiEnv(model.url), ...shared }, redis())
    // Both clocks at the same time (D's started a moment later): C's rows are due for D at once.
    const lag = d.clock.nowMs() - c.clock.nowMs()
    c.clock.advance(Math.max(0, lag))

    const { user: owner, password } = await createUser(database.db, { name: 'Olivia', ...PAYING })
    const ownerAtC = await signInAt(c.baseUrl, owner.email, password)
    const group = await createGroup(ownerAtC)
    const { user: watcher, password: watcherPassword } = await createUser(database.db, { name: 'Lena' })
    const watcherAtC = await signInAt(c.baseUrl, watcher.email, watcherPassword)
    await joinGroup(watcherAtC, group.id)
    const tab = redisUrl ? await listenOnGroup(c, watcherAtC, group.id) : null
    const atC = recordEvents(c.app, ['AiCallCompleted'])
    const atD = recordEvents(d.app, ['AiCallCompleted'])
    // Slow answers, so one instance is busy while the other claims what is left.
    model.defaultReply({ text: 'Once only.', delayMs: 200 })

    const questions = []
    for (const body of ['one?', 'two?', 'three?']) questions.push(await ask(ownerAtC, group.id, body))
    await Promise.all([c.app.outbox.drain(), d.app.outbox.drain(), d.app.outbox.drain()])
    await Promise.all([c.app.outbox.drain(), d.app.outbox.drain()])

    expect(model.requests).toHaveLength(3)
    const asked = model.requests.map((r) => JSON.stringify(r.body.messages))
    for (const body of ['one?', 'two?', 'three?'])
      expect(asked.filter((m) => m.includes(body))).toHaveLength(1)
    const assistant = ofKind(await messagesOf(ownerAtC, group.id), 'assistant')
    expect(assistant.map((m) => m.body)).toEqual(['Once only.', 'Once only.', 'Once only.'])
    const answerIds = []
    for (const question of questions) {
      const row = await analysisOf(database.db, question.id)
      expect(row?.status).toBe('completed')
      answerIds.push(row?.answerMessageId)
      expect((await callsOf(database.db, row?.id ?? 0)).map((call) => call.status)).toEqual(['completed'])
      expect(await jobOf(database.db, row?.id ?? 0)).toMatchObject({ attempts: 1, failedAt: null })
    }
    expect(new Set(answerIds)).toEqual(new Set(assistant.map((m) => m.id)))
    const completed = [...atC.of('AiCallCompleted'), ...atD.of('AiCallCompleted')]
    expect(completed.map((e) => e.messageId).sort()).toEqual(assistant.map((m) => m.id).sort())

    if (tab) {
      await eventually(() => tab.of('AiCallCompleted').length >= 3)
      await settle(300)
      expect(
        tab
          .of('AiCallCompleted')
          .map((e) => e.message_id)
          .sort(),
      ).toEqual(assistant.map((m) => m.id).sort())
    }
    atC.stop()
    atD.stop()
    closeTabs()
    await c.close()
    await d.close()
    if (redisUrl) {
      const cleaner = new Redis(redisUrl)
      const keys = await cleaner.keys(`${keyPrefix}*`)
      if (keys.length > 0) await cleaner.del(...keys)
      await cleaner.quit()
    }
  })
})
