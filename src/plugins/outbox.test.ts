import { randomBytes } from 'node:crypto'
import { asc, inArray, sql } from 'drizzle-orm'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { buildTestApp, type TestApp } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { minutes } from '../../test/helpers/clock.ts'
import { createUser } from '../../test/helpers/factories.ts'
import {
  createServerDatabase,
  openTestDatabase,
  type ServerDatabase,
  sharedDatabase,
} from '../../test/helpers/test-database.ts'
import { appUnderTest, mailSinkUnderTest } from '../../test/helpers/under-test.ts'
import { type Database, type Db, openDatabase } from '../db/client.ts'
import { outbox } from '../db/schema/index.ts'
import { systemClock } from '../lib/clock.ts'
import { renderMail } from '../lib/mail/message.ts'
import { createOutboxWorker, type OutboxHandler } from '../lib/outbox/outbox.worker.ts'

const seconds = (n: number) => n * 1000

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))

/** The outbox rows of mails to `addresses`, oldest first. */
const rowsTo = (db: Db, addresses: string[]) =>
  db
    .select()
    .from(outbox)
    .where(inArray(sql`${outbox.payload}->>'to'`, addresses))
    .orderBy(outbox.id)

/** How far past the app's now each row is due again. */
const dueIn = (rows: Array<{ availableAt: Date }>) =>
  rows.map((row) => row.availableAt.getTime() - t.clock.nowMs())

describe('the mail outbox', () => {
  it('keeps mail while the SMTP server is down, backs off, and delivers each once when it is back', async () => {
    const emails: string[] = []
    for (let i = 0; i < 4; i++) emails.push((await createUser(t.database.db)).user.email)
    await sink.stop()
    try {
      for (const email of emails) {
        // The request neither waits for nor fails with the mail server.
        const res = await new TestClient(t.baseUrl).post('/api/password/email', { email })
        expect(res.status).toBe(200)
      }
      // The first pass runs the forgot-password jobs, which queue the mails; the second tries those.
      await t.app.outbox.drain()
      await t.app.outbox.drain()
      let rows = await rowsTo(t.database.db, emails)
      expect(rows).toHaveLength(4)
      for (const row of rows) {
        expect(row).toMatchObject({ attempts: 1, sentAt: null, failedAt: null })
        expect(row.lastError).toMatch(/ECONNREFUSED/)
      }
      // First retry after 5 s, with up to 20% jitter either way.
      for (const delay of dueIn(rows)) expect(delay).toBeGreaterThanOrEqual(seconds(4))
      for (const delay of dueIn(rows)) expect(delay).toBeLessThanOrEqual(seconds(6))

      // Not due yet: a pass leaves them alone.
      await t.app.outbox.drain()
      expect((await rowsTo(t.database.db, emails)).map((row) => row.attempts)).toEqual([1, 1, 1, 1])

      // Due and still failing: tried again, and the delay doubles.
      t.clock.advance(seconds(6))
      await t.app.outbox.drain()
      rows = await rowsTo(t.database.db, emails)
      expect(rows.map((row) => row.attempts)).toEqual([2, 2, 2, 2])
      for (const delay of dueIn(rows)) expect(delay).toBeGreaterThanOrEqual(seconds(8))
      for (const delay of dueIn(rows)) expect(delay).toBeLessThanOrEqual(seconds(12))
      expect(sink.mails).toHaveLength(0)
    } finally {
      await sink.start() // on the same port
    }

    t.clock.advance(minutes(1))
    await t.app.outbox.drain()
    for (const email of emails) {
      const mail = await sink.waitForMailTo(email, 0)
      expect(mail.subject).toBe('Reset Password Notification')
    }
    // Later passes (and the worker's own wakes and polls) send nothing again.
    t.clock.advance(minutes(30))
    await t.app.outbox.drain()
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    for (const email of emails) expect(sink.to(email)).toHaveLength(1)
    const rows = await rowsTo(t.database.db, emails)
    expect(rows.map((row) => [row.attempts, row.sentAt instanceof Date, row.failedAt])).toEqual(
      emails.map(() => [3, true, null]),
    )
  })

  it('gives a mail up (failed_at) after 10 tries, backing off up to 10 minutes between them', async () => {
    const to = 'never-delivered@example.com'
    await sink.stop()
    try {
      await t.app.mailer.queue(renderMail(to, { subject: 'Doomed', lines: ['Nobody reads this.'] }))
      const delays: number[] = []
      for (let attempt = 1; attempt <= 10; attempt++) {
        await t.app.outbox.drain()
        const [row] = await rowsTo(t.database.db, [to])
        expect(row?.attempts).toBe(attempt)
        if (attempt < 10) {
          expect(row?.failedAt).toBeNull()
          delays.push(...dueIn(row ? [row] : []))
          t.clock.advance(minutes(13))
        } else {
          expect(row?.failedAt).toEqual(t.clock.now())
          expect(row?.lastError).toMatch(/ECONNREFUSED/)
        }
      }
      // 5 s doubling each try (10, 20, ... s), capped at 10 minutes; each within 20% jitter.
      const expected = [5, 10, 20, 40, 80, 160, 320, 600, 600].map(seconds)
      delays.forEach((delay, i) => {
        expect(delay).toBeGreaterThanOrEqual((expected[i] as number) * 0.8)
        expect(delay).toBeLessThanOrEqual((expected[i] as number) * 1.2)
      })
      // Given up: never tried again.
      t.clock.advance(minutes(60))
      await t.app.outbox.drain()
      expect((await rowsTo(t.database.db, [to]))[0]?.attempts).toBe(10)
    } finally {
      await sink.start()
    }
    await t.app.outbox.drain()
    expect(sink.to(to)).toEqual([])
  })
})

// Several instances on one database. On PostgreSQL each has its own connection pool and the claims
// really overlap (FOR UPDATE SKIP LOCKED); on PGlite they share its one connection. Their clocks agree,
// as NTP keeps real instances' clocks well inside the claim's lease (the first app's is hours ahead).
const postgresServerUrl = process.env.TEST_DATABASE_URL
describe('pruning delivered rows', () => {
  const days = (n: number) => n * 24 * 60 * 60_000

  /** Mails queued 13 to 31 days ago, sent or not, written behind the apps' backs; answers their recipients. */
  async function seed(now: number) {
    const row = (to: string, ageDays: number, state: 'sent' | 'failed' | 'pending') => {
      const at = new Date(now - days(ageDays))
      return {
        kind: 'mail',
        payload: { to, subject: 'Old', sealed: 'x' },
        availableAt: state === 'pending' ? new Date(now + days(1)) : at,
        createdAt: at,
        sentAt: state === 'sent' ? at : null,
        failedAt: state === 'failed' ? at : null,
        attempts: state === 'pending' ? 0 : 1,
      }
    }
    const suffix = `${now}-${Math.random().toString(36).slice(2)}`
    const to = {
      oldSent: `old-sent-${suffix}@example.com`,
      recentSent: `recent-sent-${suffix}@example.com`,
      oldFailed: `old-failed-${suffix}@example.com`,
      oldPending: `old-pending-${suffix}@example.com`,
      ancientSent: `ancient-sent-${suffix}@example.com`,
    }
    await t.database.db
      .insert(outbox)
      .values([
        row(to.oldSent, 15, 'sent'),
        row(to.recentSent, 13, 'sent'),
        row(to.oldFailed, 30, 'failed'),
        row(to.oldPending, 30, 'pending'),
        row(to.ancientSent, 31, 'sent'),
      ])
    return to
  }
  const stored = async (to: string) => (await rowsTo(t.database.db, [to])).length === 1

  it('deletes rows sent more than OUTBOX_RETENTION_DAYS (14) ago in the background once the app is up', async () => {
    // Another app on the same database: its clock starts at the real time, and it prunes at start.
    const to = await seed(Date.now())
    const other = await buildTestApp({ database: sharedDatabase(t.database) })
    try {
      await vi.waitFor(async () => expect(await stored(to.oldSent)).toBe(false), { timeout: 5000 })
      expect(await stored(to.ancientSent)).toBe(false)
      // Sent within the retention, given up on, or still waiting: kept.
      expect(await stored(to.recentSent)).toBe(true)
      expect(await stored(to.oldFailed)).toBe(true)
      expect(await stored(to.oldPending)).toBe(true)
    } finally {
      await other.close()
    }
  })

  it('keeps them as long as OUTBOX_RETENTION_DAYS says', async () => {
    const to = await seed(Date.now())
    const other = await buildTestApp({
      env: { OUTBOX_RETENTION_DAYS: '20' },
      database: sharedDatabase(t.database),
    })
    try {
      await vi.waitFor(async () => expect(await stored(to.ancientSent)).toBe(false), { timeout: 5000 })
      expect(await stored(to.oldSent)).toBe(true)
    } finally {
      await other.close()
    }
  })
})

describe('two instances on one database', () => {
  let server: ServerDatabase | undefined
  let pglite: Database | undefined
  const instances: TestApp[] = []
  afterAll(async () => {
    for (const instance of instances) await instance.close()
    await server?.drop()
    await pglite?.close()
  })

  /** One PGlite database for both apps; closing an app leaves it open. */
  async function sharedPglite(): Promise<Database> {
    pglite ??= await openTestDatabase()
    return { ...pglite, close: async () => {} }
  }

  it('deliver each of many queued mails exactly once', async () => {
    if (postgresServerUrl) server = await createServerDatabase(postgresServerUrl)
    for (let i = 0; i < 2; i++) {
      const database = server ? await openDatabase({ url: server.url }) : await sharedPglite()
      instances.push(await buildTestApp({ env: { MAIL_URL: sink.url }, database }))
    }
    const [a, b] = instances as [TestApp, TestApp]
    // Both test clocks at one time, so each instance finds the rows the other queued due.
    a.clock.advance(b.clock.nowMs() - a.clock.nowMs())
    const count = 60
    const addresses = Array.from({ length: count }, (_, i) => `many-${i}@example.com`)
    // Queued through both, so both are woken while the other is delivering.
    await Promise.all(
      addresses.map((to, i) =>
        (i % 2 === 0 ? a : b).app.mailer.queue(renderMail(to, { subject: `Mail ${i}`, lines: ['Once.'] })),
      ),
    )
    const [byA, byB] = await Promise.all([a.app.outbox.drain(), b.app.outbox.drain()])
    for (const to of addresses) await sink.waitForMailTo(to, 0)
    await Promise.all([a.app.outbox.drain(), b.app.outbox.drain()])
    await new Promise((resolve) => setTimeout(resolve, 1_200))

    expect(addresses.map((to) => sink.to(to).length)).toEqual(addresses.map(() => 1))
    const rows = await rowsTo(a.database.db, addresses)
    expect(rows).toHaveLength(count)
    // Claimed once each: no row was tried by both.
    expect(rows.every((row) => row.attempts === 1 && row.sentAt !== null)).toBe(true)
    expect(byA.failed + byA.retried + byB.failed + byB.retried).toBe(0)
  })
})

// The workers themselves, on rows of kinds of their own (the app's workers leave those alone).
const quietLog = { debug() {}, warn() {}, error() {} }

/** Queues rows of these kinds, due a second ago, oldest first; answers their ids. */
async function queueDue(...kinds: string[]): Promise<number[]> {
  const at = new Date(Date.now() - 1_000)
  const ids: number[] = []
  for (const [i, kind] of kinds.entries()) {
    const [row] = await t.database.db
      .insert(outbox)
      .values({ kind, payload: { i }, availableAt: new Date(at.getTime() + i), createdAt: at })
      .returning({ id: outbox.id })
    ids.push(row?.id ?? 0)
  }
  return ids
}

const rowsById = (ids: number[]) =>
  t.database.db.select().from(outbox).where(inArray(outbox.id, ids)).orderBy(asc(outbox.id))

describe('stopping an outbox worker', () => {
  it('claims nothing more, lets a quick try finish, and gives back the row of a slow one, its try uncounted', async () => {
    const tag = randomBytes(4).toString('hex')
    const [quick, slow] = [`quick-${tag}`, `slow-${tag}`]
    let slowStarted: () => void = () => {}
    const slowRunning = new Promise<void>((resolve) => {
      slowStarted = resolve
    })
    let slowGaveUpAfterMs = -1
    // A model call, say: it runs until its signal aborts, then gives up as an aborted fetch does.
    const slowHandler: OutboxHandler = (_payload, attempt) => {
      slowStarted()
      const began = Date.now()
      return new Promise((_resolve, reject) => {
        attempt.signal.addEventListener('abort', () => {
          slowGaveUpAfterMs = Date.now() - began
          reject(attempt.signal.reason)
        })
      })
    }
    const quickHandler: OutboxHandler = () => new Promise((resolve) => setTimeout(resolve, 150))

    // Two rows per claim: the quick and the slow one are under way together; the third waits.
    const ids = await queueDue(quick, slow, quick)
    const worker = createOutboxWorker({
      db: t.database.db,
      clock: systemClock,
      log: quietLog,
      options: { batchSize: 2, interruptAfterMs: 400, pollMs: 60_000 },
    })
    worker.handle(quick, quickHandler)
    worker.handle(slow, slowHandler)
    worker.start()
    await slowRunning

    const stopping = Date.now()
    await worker.stop()
    const tookMs = Date.now() - stopping
    // The slow try was given its grace, then interrupted; the stop did not wait for it any longer.
    expect(slowGaveUpAfterMs).toBeGreaterThanOrEqual(400)
    expect(tookMs).toBeGreaterThanOrEqual(350)
    expect(tookMs).toBeLessThan(2_000)

    const [quickRow, slowRow, waiting] = await rowsById(ids)
    // The quick try finished and was recorded as delivered.
    expect(quickRow).toMatchObject({ attempts: 1, failedAt: null, lastError: null })
    expect(quickRow?.sentAt).not.toBeNull()
    // The slow one is back as it was before its claim: due now, not counted as tried, no error.
    expect(slowRow).toMatchObject({ attempts: 0, sentAt: null, failedAt: null, lastError: null })
    expect(slowRow?.availableAt.getTime()).toBeLessThanOrEqual(Date.now())
    expect(slowRow?.availableAt.getTime()).toBeGreaterThanOrEqual(stopping)
    // The third was never claimed.
    expect(waiting).toMatchObject({ attempts: 0, sentAt: null, lastError: null })
    expect(waiting?.availableAt.getTime()).toBeLessThan(stopping)
    // A stopped worker delivers nothing more, even when asked.
    expect(await worker.drain()).toEqual({ sent: 0, retried: 0, failed: 0 })

    // The next instance takes both at once, and the slow row's first counted try is its own.
    const next = createOutboxWorker({ db: t.database.db, clock: systemClock, log: quietLog })
    next.handle(quick, quickHandler)
    next.handle(slow, async () => {})
    expect(await next.drain()).toEqual({ sent: 2, retried: 0, failed: 0 })
    await next.stop()
    const after = await rowsById(ids)
    expect(after.map((row) => [row.attempts, row.sentAt !== null])).toEqual([
      [1, true],
      [1, true],
      [1, true],
    ])
  })

  it('waits for a try that ignores the signal, and records its outcome as usual', async () => {
    const tag = randomBytes(4).toString('hex')
    const kind = `steady-${tag}`
    const [id] = await queueDue(kind)
    let running: () => void = () => {}
    const started = new Promise<void>((resolve) => {
      running = resolve
    })
    const worker = createOutboxWorker({
      db: t.database.db,
      clock: systemClock,
      log: quietLog,
      options: { interruptAfterMs: 50, pollMs: 60_000 },
    })
    // A mail to an SMTP server, say: it cannot be called back half-way, so it runs to its end.
    worker.handle(kind, () => {
      running()
      return new Promise((resolve) => setTimeout(resolve, 300))
    })
    worker.start()
    await started
    await worker.stop()
    const [row] = await rowsById([id ?? 0])
    expect(row).toMatchObject({ attempts: 1, failedAt: null, lastError: null })
    expect(row?.sentAt).not.toBeNull()
  })
})
