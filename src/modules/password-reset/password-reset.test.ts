import { createHash } from 'node:crypto'
import { createServer, type Socket } from 'node:net'
import { eq } from 'drizzle-orm'
import { describe, expect, it, vi } from 'vitest'
import { buildTestApp, SPA_ORIGIN } from '../../../test/helpers/build-test-app.ts'
import { type ClientResponse, TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { createUser, signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import type { ReceivedMail } from '../../../test/helpers/smtp-sink.ts'
import { sharedDatabase } from '../../../test/helpers/test-database.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { outbox, passwordResetTokens } from '../../db/schema/index.ts'
import { RESET_LINK_JOB } from './password-reset.service.ts'

const SENT = { message: 'We have emailed your password reset link.' }
const RESET = { message: 'Your password has been reset.' }
const INVALID = {
  message: 'This password reset token is invalid.',
  errors: { email: ['This password reset token is invalid.'] },
}
const NEW_PASSWORD = 'a brand new secret'

const sink = mailSinkUnderTest()
// Behind a trusted proxy, so that each request can say which client it comes from.
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url, TRUSTED_PROXIES: '127.0.0.1' } }))

const isResetMail = (mail: ReceivedMail) => mail.subject === 'Reset Password Notification'
const resetMailsTo = (email: string) => sink.to(email).filter(isResetMail)

// Each request from a client address of its own unless a test names one: the per-client limit is
// tested on its own, and would otherwise be spent by the file's other tests.
let clients = 0
const nextClientAddress = () => {
  clients += 1
  return `10.0.${Math.floor(clients / 250)}.${(clients % 250) + 1}`
}
const forgot = (email: string, client = new TestClient(t.baseUrl), from = nextClientAddress()) =>
  client.post('/api/password/email', { email }, { headers: { 'x-forwarded-for': from } })

/** Asks for a link over HTTP and answers the link and token from the mail that arrives. */
async function requestLink(email: string): Promise<{ link: URL; token: string }> {
  const before = resetMailsTo(email).length
  const res = await forgot(email)
  expect(res.status).toBe(200)
  const mail = await sink.waitFor((m) => isResetMail(m) && resetMailsTo(email).length > before)
  const found = mail.text.match(/http\S+\/reset-password\?\S+/)?.[0]
  if (!found) throw new Error(`no reset link in: ${mail.text}`)
  const link = new URL(found)
  return { link, token: link.searchParams.get('token') ?? '' }
}

const tokensOf = (email: string) =>
  t.database.db.select().from(passwordResetTokens).where(eq(passwordResetTokens.email, email))

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

const reset = (body: Record<string, unknown>, client = new TestClient(t.baseUrl)) =>
  client.post('/api/password/reset', body)

const login = (email: string, password: string) =>
  new TestClient(t.baseUrl).post('/api/login', { email, password })

/** What an observer sees of an answer: status, body and the headers that could differ. */
const observable = (res: ClientResponse) => ({
  status: res.status,
  body: res.data,
  limit: res.headers.get('x-ratelimit-limit'),
  remaining: res.headers.get('x-ratelimit-remaining'),
  retryAfter: res.headers.get('retry-after') !== null,
})

describe('POST /api/password/email', () => {
  it("answers Fortify's message and mails a link to the first frontend origin's reset page", async () => {
    const { user } = await createUser(t.database.db)
    const res = await forgot(user.email)
    expect(res.status).toBe(200)
    expect(res.data).toEqual(SENT)

    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.subject).toBe('Reset Password Notification')
    const link = new URL(mail.text.match(/http\S+\/reset-password\?\S+/)?.[0] ?? '')
    expect(`${link.origin}${link.pathname}`).toBe(`${SPA_ORIGIN}/reset-password`)
    expect([...link.searchParams.keys()]).toEqual(['token', 'email'])
    expect(link.searchParams.get('email')).toBe(user.email)
    const token = link.searchParams.get('token') ?? ''
    expect(token).toMatch(/^[0-9a-f]{64}$/)
    expect(mail.html).toContain(link.toString().replaceAll('&', '&amp;'))

    // Stored as its SHA-256 only: the table alone cannot reset anything.
    const rows = await t.database.db
      .select()
      .from(passwordResetTokens)
      .where(eq(passwordResetTokens.email, user.email))
    expect(rows.map((row) => row.token)).toEqual([createHash('sha256').update(token).digest('hex')])
  })

  it('answers an unknown email exactly as a registered one, and mails nobody', async () => {
    const { user } = await createUser(t.database.db)
    const unknown = uniqueEmail('nobody')
    const known = await forgot(user.email)
    const stranger = await forgot(unknown)
    expect(observable(stranger)).toEqual(observable(known))
    expect(stranger.data).toEqual(SENT)

    await sink.waitForMailTo(user.email, 0)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(sink.to(unknown)).toHaveLength(0)
  })

  it('does the same work for a known and an unknown email before answering: it queues one job, nothing more', async () => {
    // Its own database, whose job runner is held: what is stored at the answer is all the request did.
    const held = await buildTestApp({
      env: { MAIL_URL: sink.url },
      extend: (app) =>
        app.outbox.handle(RESET_LINK_JOB, async () => {
          throw new Error('held by the test')
        }),
    })
    try {
      const { user } = await createUser(held.database.db)
      const unknown = uniqueEmail('nobody')
      const known = await forgot(user.email, new TestClient(held.baseUrl))
      const stranger = await forgot(unknown, new TestClient(held.baseUrl))
      expect(observable(stranger)).toEqual(observable(known))
      const rows = await held.database.db.select().from(outbox).orderBy(outbox.id)
      expect(rows.map((row) => [row.kind, row.payload.email])).toEqual([
        [RESET_LINK_JOB, user.email],
        [RESET_LINK_JOB, unknown],
      ])
      // No token and no mail yet: the look-up and what follows it run after the answer.
      expect(await held.database.db.select().from(passwordResetTokens)).toEqual([])
    } finally {
      await held.close()
    }
  })

  it('answers a known and an unknown email in about the same time (medians of 7 interleaved runs, within a factor of 2 and 5 ms)', async () => {
    const { user } = await createUser(t.database.db)
    const times = { known: [] as number[], unknown: [] as number[] }
    for (let round = 0; round < 7; round++) {
      // Past the per-address throttle (6 a minute).
      t.clock.advance(minutes(1) + 1000)
      for (const [name, email] of [
        ['known', user.email],
        ['unknown', uniqueEmail('nobody')],
      ] as const) {
        // The previous request's job done first, so each answer is timed alone.
        await t.app.outbox.drain()
        const started = performance.now()
        expect((await forgot(email)).status).toBe(200)
        times[name].push(performance.now() - started)
      }
    }
    const [known, unknown] = [median(times.known), median(times.unknown)]
    // A few milliseconds each: 5 ms of slack on top of the factor, so a scheduling hiccup is no failure.
    expect(Math.max(known, unknown), `${known} ${unknown}`).toBeLessThan(2 * Math.min(known, unknown) + 5)
  })

  it('uses APP_URL for the link when FRONTEND_URL is empty', async () => {
    // Its own database: the link is made where the request's work runs (an outbox job), and on a
    // shared one the file's app (another FRONTEND_URL) could run it.
    const bare = await buildTestApp({
      env: { MAIL_URL: sink.url, FRONTEND_URL: '', APP_URL: 'https://api.trading.test' },
    })
    try {
      const { user } = await createUser(bare.database.db)
      // With no FRONTEND_URL, the only page that may post is one of APP_URL's own origin.
      const client = new TestClient(bare.baseUrl, 'https://api.trading.test')
      expect((await forgot(user.email, client)).status).toBe(200)
      const mail = await sink.waitForMailTo(user.email, 0)
      expect(mail.text).toContain(`https://api.trading.test/reset-password?token=`)
    } finally {
      await bare.close()
    }
  })

  it('keeps the first link when asked again within a minute; after that a new link replaces it', async () => {
    const { user, password } = await createUser(t.database.db)
    const first = await requestLink(user.email)
    const again = await forgot(user.email.toUpperCase())
    expect(again.status).toBe(200)
    expect(again.data).toEqual(SENT)

    t.clock.advance(61_000)
    const second = await requestLink(user.email)
    expect(second.token).not.toBe(first.token)
    expect((await reset({ token: first.token, email: user.email, password: NEW_PASSWORD })).data).toEqual(
      INVALID,
    )
    expect((await login(user.email, password)).status).toBe(200)
    expect((await reset({ token: second.token, email: user.email, password: NEW_PASSWORD })).status).toBe(200)
    // The request within the minute mailed nothing.
    expect(resetMailsTo(user.email)).toHaveLength(2)
  })

  it('a repeat within the minute does not replace the mailed token', async () => {
    const { user } = await createUser(t.database.db)
    const { token } = await requestLink(user.email)
    expect((await forgot(user.email)).status).toBe(200)
    const res = await reset({ token, email: user.email, password: NEW_PASSWORD })
    expect(res.status).toBe(200)
  })

  it('is throttled to 6 a minute per address, with the same 429 for a known and an unknown email', async () => {
    const { user } = await createUser(t.database.db)
    const unknown = uniqueEmail('nobody')
    const answers = { known: [] as ClientResponse[], unknown: [] as ClientResponse[] }
    for (let i = 0; i < 7; i++) {
      // Case does not dodge the counter.
      answers.known.push(await forgot(i % 2 ? user.email.toUpperCase() : user.email))
      answers.unknown.push(await forgot(i % 2 ? unknown.toUpperCase() : unknown))
    }
    expect(answers.known.map((res) => res.status)).toEqual([200, 200, 200, 200, 200, 200, 429])
    answers.known.forEach((res, i) => {
      expect(observable(res)).toEqual(observable(answers.unknown[i] as ClientResponse))
    })
    const throttled = answers.known[6] as ClientResponse
    expect(throttled.data).toEqual({ message: 'Too Many Attempts.' })
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0)

    // Another address is unaffected; the first is free again after a minute.
    expect((await forgot(uniqueEmail())).status).toBe(200)
    t.clock.advance(minutes(1) + 1000)
    expect((await forgot(user.email)).status).toBe(200)
  })

  it('is throttled to 20 an hour per client across addresses, with nothing mailed past it', async () => {
    const from = nextClientAddress()
    const emails = await Promise.all(
      Array.from({ length: 21 }, async () => (await createUser(t.database.db)).user.email),
    )
    const statuses: number[] = []
    for (const email of emails) statuses.push((await forgot(email, undefined, from)).status)
    expect(statuses).toEqual([...Array(20).fill(200), 429])
    const refused = emails[20] as string
    // The throttled request left no job: its address gets no link, and no token is made for it.
    await t.app.outbox.drain()
    await t.app.outbox.drain()
    expect(resetMailsTo(refused)).toEqual([])
    expect(await tokensOf(refused)).toEqual([])
    // Another client is unaffected, and this one is free again after the hour.
    expect((await forgot(refused)).status).toBe(200)
    t.clock.advance(minutes(60) + 1000)
    expect((await forgot(uniqueEmail(), undefined, from)).status).toBe(200)
  })

  it('answers 422 for a missing or malformed email', async () => {
    const missing = await new TestClient(t.baseUrl).post('/api/password/email', {})
    expect(missing.status).toBe(422)
    expect(missing.data).toEqual({
      message: 'The email field is required.',
      errors: { email: ['The email field is required.'] },
    })
    const malformed = await forgot('not-an-email')
    expect(malformed.status).toBe(422)
    expect(malformed.data.errors).toEqual({ email: ['The email field must be a valid email address.'] })
  })

  it('answers without waiting for the mail server', async () => {
    // An SMTP server that accepts connections and never says a word.
    const sockets = new Set<Socket>()
    const silent = createServer((socket) => {
      sockets.add(socket)
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as { port: number }).port
    // Its own database: on a shared one, the file's app could deliver this mail to the sink instead.
    const slow = await buildTestApp({ env: { MAIL_URL: `smtp://127.0.0.1:${port}` } })
    try {
      const { user } = await createUser(slow.database.db)
      const started = performance.now()
      const res = await forgot(user.email, new TestClient(slow.baseUrl))
      expect(res.status).toBe(200)
      expect(performance.now() - started).toBeLessThan(2000)
      // The mail is on its way: the worker has connected and is still waiting for a greeting.
      await vi.waitFor(() => expect(sockets.size).toBe(1), { timeout: 5000 })
    } finally {
      for (const socket of sockets) socket.destroy()
      await slow.close()
      await new Promise((resolve) => silent.close(resolve))
    }
  })
})

describe('POST /api/password/reset', () => {
  it('sets the new password with the mailed token: the old one stops working, the new one works', async () => {
    const { user, password } = await createUser(t.database.db)
    const { token, link } = await requestLink(user.email)
    const res = await reset({
      token,
      email: link.searchParams.get('email'),
      password: NEW_PASSWORD,
      password_confirmation: NEW_PASSWORD,
    })
    expect(res.status).toBe(200)
    expect(res.data).toEqual(RESET)
    expect((await login(user.email, password)).status).toBe(422)
    expect((await login(user.email, NEW_PASSWORD)).status).toBe(200)

    const notice = await sink.waitFor(
      (mail) => mail.to.includes(user.email) && mail.subject === 'Your password has been changed',
    )
    expect(notice.text).toContain('every device signed in to it was signed out')
  })

  it('works once: the same token again answers 422', async () => {
    const { user } = await createUser(t.database.db)
    const { token } = await requestLink(user.email)
    expect((await reset({ token, email: user.email, password: NEW_PASSWORD })).status).toBe(200)
    const again = await reset({ token, email: user.email, password: 'yet another secret' })
    expect(again.status).toBe(422)
    expect(again.data).toEqual(INVALID)
    expect((await login(user.email, NEW_PASSWORD)).status).toBe(200)
  })

  it('ends every session of that user, and only that user', async () => {
    const { user, password } = await createUser(t.database.db)
    const phone = await signedInClient(t, { email: uniqueEmail('unused') })
    const laptop = new TestClient(t.baseUrl)
    const desktop = new TestClient(t.baseUrl)
    expect((await laptop.post('/api/login', { email: user.email, password })).status).toBe(200)
    expect((await desktop.post('/api/login', { email: user.email, password })).status).toBe(200)

    const { token } = await requestLink(user.email)
    expect((await reset({ token, email: user.email, password: NEW_PASSWORD })).status).toBe(200)

    expect((await laptop.get('/api/user')).status).toBe(401)
    expect((await desktop.get('/api/user')).status).toBe(401)
    expect((await phone.client.get('/api/user')).status).toBe(200)
  })

  it('gives a browser signed in as that user a fresh guest session it can sign in with', async () => {
    const { client, user } = await signedInClient(t)
    const { token } = await requestLink(user.email)
    const res = await reset({ token, email: user.email, password: NEW_PASSWORD }, client)
    expect(res.status).toBe(200)
    expect((await client.get('/api/user')).status).toBe(401)
    // No new CSRF round trip needed: the fresh guest session came with its own token.
    expect((await client.post('/api/login', { email: user.email, password: NEW_PASSWORD })).status).toBe(200)
    expect((await client.get('/api/user')).data.id).toBe(user.id)
  })

  it('answers 422 for a token older than 60 minutes, and changes nothing', async () => {
    const { user, password } = await createUser(t.database.db)
    const { token } = await requestLink(user.email)
    t.clock.advance(minutes(61))
    const res = await reset({ token, email: user.email, password: NEW_PASSWORD })
    expect(res.status).toBe(422)
    expect(res.data).toEqual(INVALID)
    expect((await login(user.email, password)).status).toBe(200)
  })

  it("never resets another user's password with one's own token", async () => {
    const attacker = await createUser(t.database.db)
    const victim = await createUser(t.database.db)
    const { token } = await requestLink(attacker.user.email)
    const res = await reset({ token, email: victim.user.email, password: NEW_PASSWORD })
    expect(res.status).toBe(422)
    expect(res.data).toEqual(INVALID)
    expect((await login(victim.user.email, victim.password)).status).toBe(200)
    expect((await login(victim.user.email, NEW_PASSWORD)).status).toBe(422)
    // The victim's own pending link, if any, is untouched too.
    const victimLink = await requestLink(victim.user.email)
    expect(
      (await reset({ token: victimLink.token, email: victim.user.email, password: NEW_PASSWORD })).status,
    ).toBe(200)
  })

  it('answers the same 422 for a wrong token, an unknown email and an address that asked for nothing', async () => {
    const { user, password } = await createUser(t.database.db)
    await requestLink(user.email)
    const idle = await createUser(t.database.db)
    const wrongToken = await reset({ token: 'f'.repeat(64), email: user.email, password: NEW_PASSWORD })
    const unknownEmail = await reset({ token: 'f'.repeat(64), email: uniqueEmail(), password: NEW_PASSWORD })
    const nothingAsked = await reset({
      token: 'f'.repeat(64),
      email: idle.user.email,
      password: NEW_PASSWORD,
    })
    for (const res of [wrongToken, unknownEmail, nothingAsked]) {
      expect(res.status).toBe(422)
      expect(res.data).toEqual(INVALID)
    }
    expect((await login(user.email, password)).status).toBe(200)
  })

  it('validates like Fortify before looking at the token, which stays usable', async () => {
    const { user } = await createUser(t.database.db)
    const { token } = await requestLink(user.email)

    const empty = await reset({})
    expect(empty.status).toBe(422)
    expect(empty.data).toEqual({
      message: 'The token field is required. (and 2 more errors)',
      errors: {
        token: ['The token field is required.'],
        email: ['The email field is required.'],
        password: ['The password field is required.'],
      },
    })
    const short = await reset({ token, email: user.email, password: 'short' })
    expect(short.data.errors).toEqual({ password: ['The password field must be at least 8 characters.'] })
    const mismatch = await reset({
      token,
      email: user.email,
      password: NEW_PASSWORD,
      password_confirmation: 'something else',
    })
    expect(mismatch.status).toBe(422)
    expect(mismatch.data.errors).toEqual({ password: ['The password field confirmation does not match.'] })

    expect((await reset({ token, email: user.email.toUpperCase(), password: NEW_PASSWORD })).status).toBe(200)
  })

  it('answers 419 without the CSRF token', async () => {
    const res = await new TestClient(t.baseUrl).post(
      '/api/password/reset',
      { token: 'x', email: 'a@example.com', password: NEW_PASSWORD },
      { withoutCsrf: true },
    )
    expect(res.status).toBe(419)
  })
})

describe('reset tokens nobody can use', () => {
  it('go with the account when it is deleted', async () => {
    const { client, user, password } = await signedInClient(t)
    await requestLink(user.email)
    expect(await tokensOf(user.email)).toHaveLength(1)
    expect((await client.delete('/api/user-profile', { password })).status).toBe(200)
    expect(await tokensOf(user.email)).toEqual([])
  })

  it('are pruned in the background once the app is up: expired ones, and those of no account', async () => {
    const { user: live } = await createUser(t.database.db)
    const { user: stale } = await createUser(t.database.db)
    const orphan = uniqueEmail('gone')
    // The other app's clock starts at the real time (this file's has been moved on).
    const now = Date.now()
    // Written behind the app's back: an email changed or an account deleted by hand, a link unused.
    await t.database.db.insert(passwordResetTokens).values([
      { email: live.email, token: 'a'.repeat(64), createdAt: new Date(now - minutes(59)) },
      { email: stale.email, token: 'b'.repeat(64), createdAt: new Date(now - minutes(61)) },
      { email: orphan, token: 'c'.repeat(64), createdAt: new Date(now) },
    ])
    const other = await buildTestApp({ database: sharedDatabase(t.database) })
    try {
      await vi.waitFor(async () => expect(await tokensOf(orphan)).toEqual([]), { timeout: 5000 })
      expect(await tokensOf(stale.email)).toEqual([])
      expect(await tokensOf(live.email)).toHaveLength(1)
    } finally {
      await other.close()
    }
  })
})
