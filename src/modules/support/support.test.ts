import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { beforeEach, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import type { ReceivedMail } from '../../../test/helpers/smtp-sink.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { supportTickets } from '../../db/schema/index.ts'

const DESK = 'desk@example.com'

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url, SUPPORT_EMAIL: DESK } }))

const tag = () => randomBytes(4).toString('hex')
const ticketsFrom = (email: string) =>
  t.database.db.select().from(supportTickets).where(eq(supportTickets.email, email))
const deskMail = (subjectPart: string) =>
  sink.waitFor((m) => m.to.includes(DESK) && m.subject.includes(subjectPart))
const replyTo = (mail: ReceivedMail) => mail.parsed.replyTo?.value.map((a) => a.address)

describe('POST /api/contact-form', () => {
  // 5 a minute per address, and every request here comes from 127.0.0.1: each test starts a new minute.
  beforeEach(() => t.clock.advance(61_000))

  const form = (overrides: Record<string, unknown> = {}) => ({
    name: 'Ada Lovelace',
    email: uniqueEmail('contact'),
    subject: `Question ${tag()}`,
    message: 'How do I connect my broker account?',
    ...overrides,
  })

  it('works with no session and no CSRF token: stores the message, mails the desk and a receipt', async () => {
    const guest = new TestClient(t.baseUrl)
    const body = form({ message: 'Hello <script>alert("x")</script> & goodbye' })
    const res = await guest.post('/api/contact-form', body, {
      withoutCsrf: true,
      headers: { 'user-agent': 'ContactTest/1.0' },
    })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Thank you for your message. We will get back to you soon.' })
    expect(guest.cookies.has('XSRF-TOKEN')).toBe(false)

    const [ticket] = await ticketsFrom(body.email)
    expect(ticket).toMatchObject({
      kind: 'contact',
      userId: null,
      name: 'Ada Lovelace',
      subject: body.subject,
      message: body.message,
      category: null,
      severity: null,
      pageUrl: null,
      ipAddress: '127.0.0.1',
      userAgent: 'ContactTest/1.0',
    })

    const desk = await deskMail(body.subject)
    expect(desk.subject).toBe(`[Contact form] ${body.subject}`)
    expect(replyTo(desk)).toEqual([body.email])
    expect(desk.text).toContain(`From: Ada Lovelace <${body.email}> (not signed in)`)
    expect(desk.text).toContain('Hello <script>alert("x")</script> & goodbye')
    // The HTML part shows what was typed and runs none of it.
    expect(desk.html).toContain('Hello &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; goodbye')
    expect(desk.html).not.toContain('<script>')

    const receipt = await sink.waitForMailTo(body.email, 0)
    expect(receipt.subject).toBe('We received your message')
    // The sender's address is unproven: the receipt repeats nothing they typed.
    expect(receipt.text).not.toContain(body.subject)
    expect(receipt.text).not.toContain('script')
  })

  it('records the account of a signed-in sender', async () => {
    const { client, user } = await signedInClient(t)
    const body = form()
    expect((await client.post('/api/contact-form', body)).status).toBe(200)
    expect((await ticketsFrom(body.email))[0]?.userId).toBe(user.id)
    expect((await deskMail(body.subject)).text).toContain(`(user #${user.id})`)
  })

  it('answers a filled-in honeypot as if accepted, but stores and mails nothing', async () => {
    const guest = new TestClient(t.baseUrl)
    const trapped = form({ website: 'http://spam.example' })
    const res = await guest.post('/api/contact-form', trapped, { withoutCsrf: true })
    expect(res).toMatchObject({
      status: 200,
      data: { message: 'Thank you for your message. We will get back to you soon.' },
    })
    // A genuine message sent after it arrives; the trapped one never does.
    const genuine = form({ website: '   ' })
    expect((await guest.post('/api/contact-form', genuine, { withoutCsrf: true })).status).toBe(200)
    await deskMail(genuine.subject)
    await sink.waitForMailTo(genuine.email, 0)
    await t.app.outbox.drain()
    expect(await ticketsFrom(trapped.email)).toEqual([])
    expect(sink.mails.filter((m) => m.subject.includes(trapped.subject))).toEqual([])
    expect(sink.to(trapped.email)).toEqual([])
  })

  it('answers 422 on bad input and stores nothing', async () => {
    const guest = new TestClient(t.baseUrl)
    const email = uniqueEmail('invalid')
    const res = await guest.post(
      '/api/contact-form',
      { name: '', email: 'not-an-email', subject: 's'.repeat(256), message: 'too short' },
      { withoutCsrf: true },
    )
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({
      name: ['The name field is required.'],
      email: ['The email field must be a valid email address.'],
      subject: ['The subject field must not be greater than 255 characters.'],
      message: ['The message field must be at least 10 characters.'],
    })
    const long = await guest.post('/api/contact-form', form({ email, message: 'm'.repeat(5001) }), {
      withoutCsrf: true,
    })
    expect(long.data.errors).toEqual({
      message: ['The message field must not be greater than 5000 characters.'],
    })
    const missing = await guest.post('/api/contact-form', {}, { withoutCsrf: true })
    expect(Object.keys(missing.data.errors)).toEqual(['name', 'email', 'subject', 'message'])
    expect(await ticketsFrom(email)).toEqual([])
  })
})

/** Five accepted, the sixth refused with Laravel's 429; answers the sender, to try again later. */
async function expectContactThrottle(app: TestApp) {
  const guest = new TestClient(app.baseUrl)
  const send = (email: string) =>
    guest.post(
      '/api/contact-form',
      { name: 'Rapid', email, subject: 'Again', message: 'One more message, please.' },
      { withoutCsrf: true },
    )
  for (let i = 0; i < 5; i++) expect((await send(uniqueEmail('rapid'))).status).toBe(200)
  const sixth = uniqueEmail('sixth')
  const res = await send(sixth)
  expect(res.status).toBe(429)
  expect(res.data).toEqual({ message: 'Too Many Attempts.' })
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(res.headers.get('x-ratelimit-limit')).toBe('5')
  expect(await app.database.db.select().from(supportTickets).where(eq(supportTickets.email, sixth))).toEqual(
    [],
  )
  return send
}

// Counters live in memory, or in Redis (shared by every instance) when the run has one.
const throttleStores = ['memory', ...(process.env.TEST_REDIS_URL ? ['redis'] : [])]

describe.each(throttleStores)('POST /api/contact-form throttle (%s)', (store) => {
  it('accepts 5 a minute from one address and answers the 6th 429, storing nothing for it', async () => {
    if (store === 'memory') {
      t.clock.advance(61_000)
      const send = await expectContactThrottle(t)
      // A minute later the address may write again.
      t.clock.advance(61_000)
      expect((await send(uniqueEmail('later'))).status).toBe(200)
      return
    }
    const redis = new Redis(process.env.TEST_REDIS_URL ?? '', { keyPrefix: `test:${tag()}:` })
    const app = await buildTestApp({ redis, env: { SUPPORT_EMAIL: DESK } })
    try {
      await expectContactThrottle(app)
    } finally {
      await app.close()
    }
  })
})

describe('POST /api/support-request', () => {
  it('answers 401 to a guest', async () => {
    const guest = new TestClient(t.baseUrl)
    const res = await guest.post('/api/support-request', { subject: 'Help', message: 'Please help me out.' })
    expect(res).toMatchObject({ status: 401, data: { message: 'Unauthenticated.' } })
  })

  it("stores the request with the user's name and email, mails the desk (Reply-To the user) and a receipt", async () => {
    const { client, user } = await signedInClient(t, { name: 'Grace Hopper', verified: true })
    const subject = `Billing <b>${tag()}</b>`
    const res = await client.post('/api/support-request', {
      subject,
      message: 'I was charged twice\nfor one package.',
      category: 'billing',
    })
    expect(res).toMatchObject({
      status: 200,
      data: { message: 'Your support request has been sent. We will get back to you soon.' },
    })
    const [ticket] = await ticketsFrom(user.email)
    expect(ticket).toMatchObject({
      kind: 'support',
      userId: user.id,
      name: 'Grace Hopper',
      category: 'billing',
    })

    const desk = await deskMail(subject)
    expect(desk.subject).toBe(`[Support request] ${subject}`)
    expect(replyTo(desk)).toEqual([user.email])
    expect(desk.text).toContain('Category: billing')
    expect(desk.text).toContain('I was charged twice\nfor one package.')
    expect(desk.html).toContain(`Billing &lt;b&gt;`)
    expect(desk.html).not.toContain('<b>')

    const receipt = await sink.waitForMailTo(user.email, 0)
    expect(receipt.subject).toBe(`We received your support request #${ticket?.id}`)
    expect(receipt.text).toContain(`(reference #${ticket?.id})`)
    // Nothing the sender typed (subject, message, their name) is repeated to the address.
    for (const typed of ['Billing', 'charged', 'Grace']) {
      expect(receipt.subject).not.toContain(typed)
      expect(receipt.text).not.toContain(typed)
      expect(receipt.html).not.toContain(typed)
    }
  })

  it('answers 422 on bad input and stores nothing', async () => {
    const { client, user } = await signedInClient(t)
    const res = await client.post('/api/support-request', {
      subject: '   ',
      message: 'short',
      category: 'c'.repeat(65),
    })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({
      subject: ['The subject field is required.'],
      message: ['The message field must be at least 10 characters.'],
      category: ['The category field must not be greater than 64 characters.'],
    })
    expect(await ticketsFrom(user.email)).toEqual([])
  })

  it('accepts 10 a minute from one user and answers the 11th 429', async () => {
    const { client } = await signedInClient(t)
    const send = () => client.post('/api/support-request', { subject: 'Again', message: 'Still need help.' })
    for (let i = 0; i < 10; i++) expect((await send()).status).toBe(200)
    expect(await send()).toMatchObject({ status: 429, data: { message: 'Too Many Attempts.' } })
  })
})

describe('receipts of signed-in senders', () => {
  it.each([
    ['/api/support-request', 'Support request'],
    ['/api/report-issue', 'Issue report'],
  ])('%s: the desk is mailed, but an unverified address gets no receipt', async (path, title) => {
    const { client, user } = await signedInClient(t, { verified: false })
    const subject = `Unverified ${tag()}`
    expect((await client.post(path, { subject, message: 'Please mail this to a stranger.' })).status).toBe(
      200,
    )
    expect((await ticketsFrom(user.email)).length).toBe(1)
    expect((await deskMail(subject)).subject).toBe(`[${title}] ${subject}`)
    await t.app.outbox.drain()
    expect(sink.to(user.email)).toEqual([])
  })
})

describe('POST /api/report-issue', () => {
  it('answers 401 to a guest', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/report-issue', {
      subject: 'Bug',
      message: 'It broke down.',
    })
    expect(res.status).toBe(401)
  })

  it('stores the report with severity and page, and mails the desk and a receipt', async () => {
    const { client, user } = await signedInClient(t, { verified: true })
    const subject = `Chart is blank ${tag()}`
    const res = await client.post('/api/report-issue', {
      subject,
      message: 'The chart shows nothing <img src=x onerror=alert(1)>',
      category: 'charts',
      severity: 'high',
      page_url: 'https://app.example.com/markets/BTC?tab=chart',
    })
    expect(res).toMatchObject({
      status: 200,
      data: { message: 'Thank you for reporting the issue. We will look into it.' },
    })
    const [ticket] = await ticketsFrom(user.email)
    expect(ticket).toMatchObject({
      kind: 'issue',
      userId: user.id,
      severity: 'high',
      category: 'charts',
      pageUrl: 'https://app.example.com/markets/BTC?tab=chart',
    })

    const desk = await deskMail(subject)
    expect(desk.subject).toBe(`[Issue report (high)] ${subject}`)
    expect(replyTo(desk)).toEqual([user.email])
    expect(desk.text).toContain('Severity: high')
    expect(desk.text).toContain('Page: https://app.example.com/markets/BTC?tab=chart')
    expect(desk.html).toContain('&lt;img src=x onerror=alert(1)&gt;')
    expect(desk.html).not.toContain('<img')

    const receipt = await sink.waitForMailTo(user.email, 0)
    expect(receipt.subject).toBe(`We received your issue report #${ticket?.id}`)
    for (const typed of ['Chart', 'chart', 'onerror', 'charts', 'app.example.com']) {
      expect(receipt.text).not.toContain(typed)
      expect(receipt.html).not.toContain(typed)
    }
  })

  it('takes severity, category and page as optional', async () => {
    const { client, user } = await signedInClient(t)
    const res = await client.post('/api/report-issue', {
      subject: 'Minor',
      message: 'Something small is off.',
      severity: null,
      page_url: null,
    })
    expect(res.status).toBe(200)
    expect((await ticketsFrom(user.email))[0]).toMatchObject({
      severity: null,
      pageUrl: null,
      category: null,
    })
    expect((await deskMail('[Issue report] Minor')).subject).toBe('[Issue report] Minor')
  })

  it('answers 422 on an unknown severity or a page that is not an http(s) URL, storing nothing', async () => {
    const { client, user } = await signedInClient(t)
    for (const page_url of ['javascript:alert(1)', 'ftp://example.com/file', 'not a url', 'https://']) {
      const res = await client.post('/api/report-issue', {
        subject: 'Bad',
        message: 'This one is refused.',
        severity: 'urgent',
        page_url,
      })
      expect(res.status).toBe(422)
      expect(res.data.errors).toEqual({
        severity: ['The selected severity is invalid.'],
        page_url: ['The page url field format is invalid.'],
      })
    }
    expect(await ticketsFrom(user.email)).toEqual([])
  })
})
