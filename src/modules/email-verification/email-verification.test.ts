import { createHash, createHmac } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { buildTestApp, TEST_APP_KEY } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { createUser, signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import type { ReceivedMail } from '../../../test/helpers/smtp-sink.ts'
import { sharedDatabase } from '../../../test/helpers/test-database.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { users } from '../../db/schema/index.ts'
import { signUrl } from '../../lib/signed-url.ts'

// Not the address the test app listens on: links must be signed over APP_URL, never the Host header.
const APP_URL = 'https://api.trading.test'
const laravelDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const sha1 = (value: string) => createHash('sha1').update(value).digest('hex')

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url, APP_URL } }))

/** The verification link in a mail, checked to appear in both the text and the HTML part. */
function linkIn(mail: ReceivedMail, appUrl = APP_URL): URL {
  const pattern = new RegExp(`${appUrl.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/api/email/verify\\?\\S+`)
  const found = mail.text.match(pattern)?.[0]
  if (!found) throw new Error(`no verification link in: ${mail.text}`)
  expect(mail.html).toContain(found.replaceAll('&', '&amp;'))
  return new URL(found)
}

/** Follows a link the way a browser reaching this app would: its path and query, against the app. */
const follow = (client: TestClient, link: URL, stripPrefix = '') =>
  client.get(`${link.pathname.slice(stripPrefix.length)}${link.search}`)

/** Registers a new account over HTTP and answers the client, the user and the link mailed to them. */
async function register(app = t, appUrl = APP_URL) {
  const client = new TestClient(app.baseUrl)
  const email = uniqueEmail('verify')
  const res = await client.post('/api/register', { name: 'Vera', email, password: 'long enough secret' })
  expect(res.status).toBe(201)
  const mail = await sink.waitForMailTo(email, 0)
  return { client, email, id: res.data.id as number, mail, link: linkIn(mail, appUrl) }
}

function withParam(link: URL, name: string, value: string): URL {
  const changed = new URL(link)
  changed.searchParams.set(name, value)
  return changed
}

describe('the verification mail sent at registration', () => {
  it('carries a link signed over APP_URL that names the user and the sha1 of the address', async () => {
    const { email, id, mail, link } = await register()
    expect(mail.subject).toBe('Verify Email Address')
    expect(mail.to).toEqual([email])
    expect(`${link.origin}${link.pathname}`).toBe(`${APP_URL}/api/email/verify`)
    expect([...link.searchParams.keys()]).toEqual(['id', 'hash', 'expires', 'signature'])
    expect(link.searchParams.get('id')).toBe(String(id))
    expect(link.searchParams.get('hash')).toBe(sha1(email))
    const nowSeconds = Math.floor(t.clock.nowMs() / 1000)
    expect(Number(link.searchParams.get('expires'))).toBe(nowSeconds + 3600)
    // Laravel's signature: HMAC-SHA256 under the literal APP_KEY over the URL without the signature.
    const unsigned = `${APP_URL}/api/email/verify?id=${id}&hash=${sha1(email)}&expires=${nowSeconds + 3600}`
    const expected = createHmac('sha256', TEST_APP_KEY).update(unsigned).digest('hex')
    expect(link.searchParams.get('signature')).toBe(expected)
  })

  it('verifies the address: 200 {"message":"Email verified."}, then GET /api/user shows email_verified_at', async () => {
    const { client, link } = await register()
    expect((await client.get('/api/user')).data.email_verified_at).toBeNull()

    const res = await follow(client, link)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Email verified.' })

    const me = await client.get('/api/user')
    expect(me.data.email_verified_at).toMatch(laravelDate)
    // A second click is harmless and keeps the first time.
    t.clock.advance(minutes(1))
    expect((await follow(client, link)).data).toEqual({ message: 'Email verified.' })
    expect((await client.get('/api/user')).data.email_verified_at).toBe(me.data.email_verified_at)
  })

  it('works in a browser that is not signed in (the mail opened on another device)', async () => {
    const { client, link } = await register()
    const res = await follow(new TestClient(t.baseUrl), link)
    expect(res.status).toBe(200)
    expect((await client.get('/api/user')).data.email_verified_at).toMatch(laravelDate)
  })

  it('answers 403 for a tampered id, hash, expires or signature, or an added parameter, and verifies nobody', async () => {
    const victim = await createUser(t.database.db)
    const { client, link } = await register()
    const signature = link.searchParams.get('signature') ?? ''
    const flipped = `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`
    const expires = Number(link.searchParams.get('expires'))
    const tampered = [
      withParam(link, 'id', String(victim.user.id)),
      withParam(link, 'hash', sha1(victim.user.email)),
      withParam(link, 'expires', String(expires + 86_400)),
      withParam(link, 'signature', flipped),
      withParam(link, 'signature', signature.toUpperCase()),
      withParam(link, 'extra', '1'),
    ]
    for (const bad of tampered) {
      const res = await follow(new TestClient(t.baseUrl), bad)
      expect(res.status, bad.search).toBe(403)
      expect(res.data).toEqual({ message: 'Invalid signature.' })
    }
    expect((await client.get('/api/user')).data.email_verified_at).toBeNull()
    const [victimRow] = await t.database.db.select().from(users).where(eq(users.id, victim.user.id))
    expect(victimRow?.emailVerifiedAt).toBeNull()
  })

  it('answers 403 once the link is older than 60 minutes', async () => {
    const { client, link } = await register()
    t.clock.advance(minutes(61))
    const res = await follow(client, link)
    expect(res.status).toBe(403)
    expect(res.data).toEqual({ message: 'This verification link has expired.' })
    expect((await client.get('/api/user')).data.email_verified_at).toBeNull()
  })

  it('answers 403 for a link signed over another APP_URL with the same key', async () => {
    const { client, link } = await register()
    const foreign = new URL(
      signUrl(
        `https://elsewhere.test/api/email/verify?id=${link.searchParams.get('id')}&hash=${link.searchParams.get('hash')}`,
        TEST_APP_KEY,
        new Date(t.clock.nowMs() + minutes(60)),
      ),
    )
    const res = await follow(client, foreign)
    expect(res.status).toBe(403)
    expect((await client.get('/api/user')).data.email_verified_at).toBeNull()
  })

  it('answers 403 for a link made for an address the user no longer has', async () => {
    const { client, id, link } = await register()
    await t.database.db
      .update(users)
      .set({ email: uniqueEmail('moved') })
      .where(eq(users.id, id))
    const res = await follow(client, link)
    expect(res.status).toBe(403)
    expect(res.data).toEqual({ message: 'This action is unauthorized.' })
    expect((await client.get('/api/user')).data.email_verified_at).toBeNull()
  })

  it("verifies only the link's own user, whoever is signed in when it is followed", async () => {
    const { client: owner, link } = await register()
    const other = await signedInClient(t)
    expect((await follow(other.client, link)).status).toBe(200)
    expect((await other.client.get('/api/user')).data.email_verified_at).toBeNull()
    expect((await owner.get('/api/user')).data.email_verified_at).toMatch(laravelDate)
  })

  it('works when APP_URL has a path the proxy strips before the app', async () => {
    const prefixed = await buildTestApp({
      env: { MAIL_URL: sink.url, APP_URL: 'https://example.test/backend' },
      database: sharedDatabase(t.database),
    })
    try {
      const { client, link } = await register(prefixed, 'https://example.test/backend')
      expect(link.pathname).toBe('/backend/api/email/verify')
      expect((await follow(client, link, '/backend')).status).toBe(200)
      expect((await client.get('/api/user')).data.email_verified_at).toMatch(laravelDate)
    } finally {
      await prefixed.close()
    }
  })
})

describe('GET /api/email/verify input', () => {
  it("answers 403 for a link without a signature, as Laravel's signed middleware does, and verifies nobody", async () => {
    const { client, link } = await register()
    const unsigned = new URL(link)
    unsigned.searchParams.delete('signature')
    const anonymous = new TestClient(t.baseUrl)
    for (const path of [
      `${unsigned.pathname}${unsigned.search}`,
      `${withParam(link, 'signature', '').pathname}${withParam(link, 'signature', '').search}`,
      '/api/email/verify',
      '/api/email/verify?id=abc',
    ]) {
      const res = await anonymous.get(path)
      expect(res.status, path).toBe(403)
      expect(res.data, path).toEqual({ message: 'Invalid signature.' })
    }
    expect((await client.get('/api/user')).data.email_verified_at).toBeNull()
  })

  it('answers 422 in Laravel shape for a signed link without the other parameters or with wrongly typed ones', async () => {
    const client = new TestClient(t.baseUrl)
    const missing = await client.get('/api/email/verify?signature=abc')
    expect(missing.status).toBe(422)
    expect(missing.data.errors).toEqual({
      id: ['The id field is required.'],
      hash: ['The hash field is required.'],
      expires: ['The expires field is required.'],
    })
    const typed = await client.get(
      `/api/email/verify?id=abc&hash=${'h'.repeat(129)}&expires=soon&signature=x`,
    )
    expect(typed.status).toBe(422)
    expect(Object.keys(typed.data.errors).sort()).toEqual(['expires', 'hash', 'id'])
  })
})

describe('POST /api/user-profile/email/verification-notification', () => {
  const path = '/api/user-profile/email/verification-notification'

  it("mails a fresh link to the signed-in user's own address, and it verifies that user", async () => {
    const { client, user } = await signedInClient(t)
    const bystander = await signedInClient(t)
    const res = await client.post(path)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Verification link sent.' })
    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.subject).toBe('Verify Email Address')
    expect(linkIn(mail).searchParams.get('id')).toBe(String(user.id))
    expect(sink.to(bystander.user.email)).toHaveLength(0)

    expect((await follow(client, linkIn(mail))).status).toBe(200)
    expect((await client.get('/api/user')).data.email_verified_at).toMatch(laravelDate)
    expect((await bystander.client.get('/api/user')).data.email_verified_at).toBeNull()
  })

  it('answers 200 {"message":"Email already verified."} to a verified user and mails nothing', async () => {
    const verified = await signedInClient(t, { verified: true })
    const res = await verified.client.post(path)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Email already verified.' })
    // A mail queued after it arrives first-come; once that one is in, the other would be too.
    const unverified = await signedInClient(t)
    await unverified.client.post(path)
    await sink.waitForMailTo(unverified.user.email, 0)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(sink.to(verified.user.email)).toHaveLength(0)
  })

  it('is throttled to 6 a minute per user: the 7th answers 429, other users are unaffected', async () => {
    const { client } = await signedInClient(t)
    for (let i = 1; i <= 6; i++) {
      const res = await client.post(path)
      expect(res.status).toBe(200)
      expect(res.headers.get('x-ratelimit-limit')).toBe('6')
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(6 - i))
    }
    const seventh = await client.post(path)
    expect(seventh.status).toBe(429)
    expect(seventh.data).toEqual({ message: 'Too Many Attempts.' })
    expect(Number(seventh.headers.get('retry-after'))).toBeGreaterThan(0)

    const other = await signedInClient(t)
    expect((await other.client.post(path)).status).toBe(200)

    t.clock.advance(minutes(1) + 1000)
    expect((await client.post(path)).status).toBe(200)
  })

  it('answers 401 to a guest and 419 without the CSRF token', async () => {
    const guest = await new TestClient(t.baseUrl).post(path)
    expect(guest.status).toBe(401)
    expect(guest.data).toEqual({ message: 'Unauthenticated.' })
    const { client } = await signedInClient(t)
    const noCsrf = await client.post(path, undefined, { withoutCsrf: true })
    expect(noCsrf.status).toBe(419)
  })
})
