import { createHash, randomBytes, randomInt } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { buildTestApp, TEST_APP_KEY, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { signedInAdmin } from '../../../test/helpers/factories.ts'
import { resetPasswordByMail } from '../../../test/helpers/password-reset.ts'
import { sharedDatabase } from '../../../test/helpers/test-database.ts'
import { withTwoInstances } from '../../../test/helpers/two-instances.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { rememberTokens, sessions, users } from '../../db/schema/index.ts'
import { unixSeconds } from '../../lib/clock.ts'
import { createEventBus } from '../../lib/events.ts'
import { encryptLaravelCookie } from '../../lib/laravel-compat/cookies.ts'
import { laravelFixtures as fixtures } from '../../lib/laravel-compat/fixtures/laravel-fixtures.ts'
import { rememberCookieName } from '../../lib/laravel-compat/session-guard.ts'
import { hashSessionToken, randomSessionToken } from '../../lib/sessions/session-store.ts'
import { createSessionsRepository } from '../../lib/sessions/sessions.repository.ts'
import { createUsersService } from '../users/users.service.ts'
import { createImportedUsersRepository } from './imported-users.repository.ts'
import { legacySessionToken } from './legacy-session-token.ts'

// A browser of the Laravel original, after `import:laravel --sessions`: the rows the import writes
// (the user with the original's bcrypt hash, laravel_imported_users, the session under its derived
// id), and the cookies Laravel set (encrypted with its APP_KEY, fixtures/laravel.json's keys).

const { current, previous } = fixtures.keys
const REMEMBER = rememberCookieName()
const PASSWORD = 'password' // fixtures.passwordHash is its bcrypt hash (cost 4), as make-fixtures.php made it
const WINDOW_MS = 30 * 24 * 60 * 60_000
const redisUrl = process.env.TEST_REDIS_URL

const legacyEnv = (untilMs = Date.now() + WINDOW_MS) => ({
  LARAVEL_APP_KEY: current,
  LARAVEL_PREVIOUS_KEYS: previous,
  LARAVEL_COOKIES_UNTIL: new Date(untilMs).toISOString(),
})
// With Redis (the PostgreSQL + Redis run), the sessions the app caches are invalidated through it,
// under a key space of this file's own, deleted afterwards.
const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
const sharedRedis = () => (redisUrl ? new Redis(redisUrl, { keyPrefix }) : undefined)
afterAll(async () => {
  if (!redisUrl) return
  const cleaner = new Redis(redisUrl, { keyPrefix })
  const keys = await cleaner.keys(`${keyPrefix}*`)
  if (keys.length > 0) await cleaner.del(...keys.map((key) => key.slice(keyPrefix.length)))
  await cleaner.quit()
})

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { ...legacyEnv(), MAIL_URL: sink.url }, redis: sharedRedis() }))

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')
/** A cookie as Laravel sends it: encrypted with its name's prefix, then percent-encoded (rawurlencode). */
const laravelCookie = (name: string, value: string, key = current) =>
  encodeURIComponent(encryptLaravelCookie(name, value, key))
const oldSessionId = () => randomBytes(30).toString('base64url').slice(0, 40)

interface Imported {
  userId: number
  email: string
  oldId: number
  rememberToken: string
}

/** What the import writes for one user of the original: the user (bcrypt hash as it was) and its old id. */
async function importUser(
  app: TestApp,
  { oldId = randomInt(1_000_000, 1_000_000_000), rememberToken = randomSessionToken() } = {},
): Promise<Imported> {
  const { db } = app.database
  const user = await createUsersService({ db, clock: app.clock, events: createEventBus() }).create({
    name: 'Imported Trader',
    email: `imported-${randomBytes(5).toString('hex')}@example.com`,
    passwordHash: fixtures.passwordHash,
    verified: true,
  })
  await createImportedUsersRepository({ db }).insert([
    {
      oldId,
      userId: user.id,
      rememberTokenDigest: sha256(rememberToken),
      legacyPasswordHash: fixtures.passwordHash,
    },
  ])
  return { userId: user.id, email: user.email, oldId, rememberToken }
}

/** What `--sessions` writes for one live session of the original: our row under the derived token's hash. */
async function importSession(app: TestApp, userId: number, sessionId: string, csrfToken: string) {
  const now = unixSeconds(app.clock)
  await createSessionsRepository({ db: app.database.db }).insert({
    id: hashSessionToken(legacySessionToken(sessionId, TEST_APP_KEY)),
    userId,
    ipAddress: null,
    userAgent: null,
    payload: { csrfToken },
    lastActivity: now - 60,
    createdAt: now - 3600,
    rememberTokenId: null,
  })
}

/** A browser carrying the original's session and XSRF-TOKEN cookies. */
function oldBrowser(app: TestApp, sessionId: string, csrfToken: string, key = current) {
  const client = new TestClient(app.baseUrl)
  client.cookies.set('laravel_session', laravelCookie('laravel_session', sessionId, key))
  client.cookies.set('XSRF-TOKEN', laravelCookie('XSRF-TOKEN', csrfToken, key))
  return client
}

/** A browser carrying the original's remember cookie: `id|remember_token|hash`, the hash HMAC'd (Laravel 12.45+). */
function rememberedBrowser(app: TestApp, imported: Imported, hash = hmacOfPasswordHash()) {
  const client = new TestClient(app.baseUrl)
  client.cookies.set(REMEMBER, laravelCookie(REMEMBER, `${imported.oldId}|${imported.rememberToken}|${hash}`))
  return client
}
const hmacOfPasswordHash = () => fixtures.passwordMac

const setCookie = (res: { headers: Headers }, name: string) =>
  res.headers.getSetCookie().find((line) => line.startsWith(`${name}=`))
const expires = (line: string | undefined) => line !== undefined && /; Max-Age=0(;|$)/.test(line)

const rowsOf = (app: TestApp, userId: number) =>
  app.database.db.select().from(sessions).where(eq(sessions.userId, userId))
const devicesOf = (app: TestApp, userId: number) =>
  app.database.db.select().from(rememberTokens).where(eq(rememberTokens.userId, userId))
/** The ids of every session and remembered device stored (the sweep may delete some meanwhile, never add). */
const stored = async (app: TestApp) => {
  const ids = await app.database.db.select({ id: sessions.id }).from(sessions)
  const devices = await app.database.db.select({ id: rememberTokens.id }).from(rememberTokens)
  return new Set([...ids, ...devices].map((row) => row.id))
}
const addedSince = async (app: TestApp, before: Set<string>) =>
  [...(await stored(app))].filter((id) => !before.has(id))

describe("the original's session cookie", () => {
  it('continues the imported session: the user, our cookies in the answer, its own expired (cookies Laravel wrote)', async () => {
    // fixtures.cookies were written by Laravel's EncryptCookies under PHP (make-fixtures.php).
    const [session, xsrf] = fixtures.cookies
    if (!session || !xsrf) throw new Error('fixtures.cookies lacks the session and XSRF cookies')
    const imported = await importUser(t)
    await importSession(t, imported.userId, session.value, xsrf.value)
    const client = new TestClient(t.baseUrl)
    client.cookies.set('laravel_session', session.header)
    client.cookies.set('XSRF-TOKEN', xsrf.header)

    const res = await client.get('/api/user')
    expect(res.status).toBe(200)
    expect(res.data.id).toBe(imported.userId)
    const ours = client.cookies.get('app_session') ?? ''
    expect(hashSessionToken(ours)).toBe(hashSessionToken(legacySessionToken(session.value, TEST_APP_KEY)))
    expect(setCookie(res, 'XSRF-TOKEN')).toMatch(/^XSRF-TOKEN=[^;]+;/)
    expect(expires(setCookie(res, 'laravel_session'))).toBe(true)
    expect(client.cookies.has('laravel_session')).toBe(false)

    // From then on the browser is an ordinary one of this service's, its writes included.
    expect((await client.get('/api/user')).data.id).toBe(imported.userId)
    expect((await client.post('/api/user/settings', { theme: 'dark' })).status).toBe(200)
    expect(await rowsOf(t, imported.userId)).toHaveLength(1)
  })

  it("passes the SPA's next write carrying the original's XSRF-TOKEN in X-XSRF-TOKEN", async () => {
    const imported = await importUser(t)
    const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
    await importSession(t, imported.userId, sessionId, csrf)
    const client = oldBrowser(t, sessionId, csrf)
    const oldXsrf = decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? '')
    expect((await client.get('/api/user')).status).toBe(200)
    // The cookies are ours now, but the write in flight read the original's XSRF-TOKEN.
    const write = await client.post('/api/user/settings', { n: 1 }, { headers: { 'x-xsrf-token': oldXsrf } })
    expect(write.status).toBe(200)
  })

  it("passes a first request that is a write, with the original's cookies only", async () => {
    const imported = await importUser(t)
    const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
    await importSession(t, imported.userId, sessionId, csrf)
    const res = await oldBrowser(t, sessionId, csrf).post('/api/user/settings', { n: 2 })
    expect(res.status).toBe(200)
    expect(setCookie(res, 'app_session')).toBeDefined()
  })

  it("refuses with 419 an X-XSRF-TOKEN in the original's format that is not the session's token", async () => {
    const imported = await importUser(t)
    const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
    await importSession(t, imported.userId, sessionId, csrf)
    const client = oldBrowser(t, sessionId, csrf)
    expect((await client.get('/api/user')).status).toBe(200)
    const other = encryptLaravelCookie('XSRF-TOKEN', randomSessionToken(), current)
    const wrongToken = await client.post('/api/user/settings', {}, { headers: { 'x-xsrf-token': other } })
    expect(wrongToken.status).toBe(419)
    // The session's token under another name's prefix (the session cookie's) is not an XSRF token.
    const otherName = encryptLaravelCookie('laravel_session', csrf, current)
    expect(
      (await client.post('/api/user/settings', {}, { headers: { 'x-xsrf-token': otherName } })).status,
    ).toBe(419)
  })

  it('opens a cookie written under a previous key (LARAVEL_PREVIOUS_KEYS)', async () => {
    const imported = await importUser(t)
    const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
    await importSession(t, imported.userId, sessionId, csrf)
    const client = oldBrowser(t, sessionId, csrf, previous)
    expect((await client.get('/api/user')).data.id).toBe(imported.userId)
    const write = await client.post(
      '/api/user/settings',
      {},
      { headers: { 'x-xsrf-token': encryptLaravelCookie('XSRF-TOKEN', csrf, previous) } },
    )
    expect(write.status).toBe(200)
  })

  it('lands requests that arrive together with one old cookie on one session', async () => {
    const imported = await importUser(t)
    const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
    await importSession(t, imported.userId, sessionId, csrf)
    const cookie = oldBrowser(t, sessionId, csrf).cookieHeader
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        fetch(`${t.baseUrl}/api/user`, { headers: { cookie, accept: 'application/json' } }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(new Set(answers.map((a) => setCookie(a, 'app_session')?.split(';')[0])).size).toBe(1)
    expect(await rowsOf(t, imported.userId)).toHaveLength(1)
  })

  it('is a guest when the imported session has ended (idle past the lifetime): the old cookie is expired', async () => {
    const imported = await importUser(t)
    const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
    const now = unixSeconds(t.clock)
    await createSessionsRepository({ db: t.database.db }).insert({
      id: hashSessionToken(legacySessionToken(sessionId, TEST_APP_KEY)),
      userId: imported.userId,
      ipAddress: null,
      userAgent: null,
      payload: { csrfToken: csrf },
      lastActivity: now - 121 * 60,
      createdAt: now - 121 * 60,
      rememberTokenId: null,
    })
    const res = await oldBrowser(t, sessionId, csrf).get('/api/user')
    expect(res.status).toBe(401)
    expect(expires(setCookie(res, 'laravel_session'))).toBe(true)
    expect(setCookie(res, 'app_session')).toBeUndefined()
    expect(await rowsOf(t, imported.userId)).toEqual([])
  })

  it('lets nobody in, creates nothing and leaves the cookie as it is, for a garbage, tampered, foreign-key or oversized one', async () => {
    const imported = await importUser(t)
    const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
    await importSession(t, imported.userId, sessionId, csrf)
    const genuine = encryptLaravelCookie('laravel_session', sessionId, current)
    const fields = JSON.parse(Buffer.from(genuine, 'base64').toString('utf8'))
    fields.value = `${fields.value.startsWith('A') ? 'B' : 'A'}${fields.value.slice(1)}`
    const tampered = Buffer.from(JSON.stringify(fields)).toString('base64')
    const otherKey = encryptLaravelCookie(
      'laravel_session',
      sessionId,
      `base64:${randomBytes(32).toString('base64')}`,
    )
    const otherName = encryptLaravelCookie('XSRF-TOKEN', sessionId, current)
    // A session id that opens, but whose cookie is longer than any Laravel writes: not decrypted.
    const longId = 'x'.repeat(900)
    await importSession(t, imported.userId, longId, csrf)
    const oversized = encryptLaravelCookie('laravel_session', longId, current)
    const before = await stored(t)
    for (const value of ['garbage', 'eyJpdiI6', tampered, otherKey, otherName, oversized]) {
      const client = new TestClient(t.baseUrl)
      client.cookies.set('laravel_session', encodeURIComponent(value))
      const res = await client.get('/api/user')
      expect(res.status).toBe(401)
      expect(res.headers.getSetCookie()).toEqual([])
    }
    expect(await addedSince(t, before)).toEqual([])
    // The genuine cookie still opens the session.
    expect((await oldBrowser(t, sessionId, csrf).get('/api/user')).status).toBe(200)
  })
})

describe("the original's remember cookie", () => {
  it('signs its user in as remember-me does: a new session, a new remember cookie, its own expired', async () => {
    const imported = await importUser(t)
    const client = rememberedBrowser(t, imported)
    const res = await client.get('/api/user')
    expect(res.status).toBe(200)
    expect(res.data.id).toBe(imported.userId)
    expect(setCookie(res, 'app_remember')).toMatch(/; HttpOnly(;|$)/)
    expect(expires(setCookie(res, REMEMBER))).toBe(true)
    expect(client.cookies.has(REMEMBER)).toBe(false)
    const [device] = await devicesOf(t, imported.userId)
    expect(device?.id).toBe(sha256(client.cookies.get('app_remember') ?? ''))
    const [session] = await rowsOf(t, imported.userId)
    expect(session?.rememberTokenId).toBe(device?.id)

    // The device is ours now: once the session ends idle, our remember cookie brings the user back.
    t.clock.advance(minutes(121))
    expect((await client.get('/api/user')).data.id).toBe(imported.userId)
  })

  it('takes the cookies Laravel wrote, with the password hash raw or as its HMAC', async () => {
    // fixtures.cookies' remember cookies (PHP): old id 42 with the HMAC, old id 7 with the raw hash (GCM).
    const made = fixtures.cookies.filter((cookie) => cookie.name === REMEMBER)
    expect(made).toHaveLength(2)
    for (const cookie of made) {
      const imported = await importUser(t, {
        oldId: Number(cookie.value.split('|')[0]),
        rememberToken: fixtures.rememberToken,
      })
      const client = new TestClient(t.baseUrl)
      client.cookies.set(REMEMBER, cookie.header)
      const res = await client.get('/api/user')
      expect(res.status).toBe(200)
      expect(res.data.id).toBe(imported.userId)
    }
  })

  it('lets nobody in for a wrong token, a wrong password hash or an unknown id, and creates nothing', async () => {
    const imported = await importUser(t)
    const before = await stored(t)
    const wrong = [
      rememberedBrowser(t, { ...imported, rememberToken: randomSessionToken() }),
      rememberedBrowser(t, imported, sha256('another password hash')),
      rememberedBrowser(t, imported, '$2y$04$anotherbcrypthashanotherbcrypthashanotherbcrypthash12'),
      rememberedBrowser(t, { ...imported, oldId: imported.oldId + 1 }),
    ]
    for (const client of wrong) {
      const res = await client.get('/api/user')
      expect(res.status).toBe(401)
      expect(setCookie(res, 'app_remember')).toBeUndefined()
    }
    expect(await addedSince(t, before)).toEqual([])
    expect((await rememberedBrowser(t, imported).get('/api/user')).status).toBe(200)
  })

  it('starts one session for requests that arrive together', async () => {
    const imported = await importUser(t)
    const cookie = rememberedBrowser(t, imported).cookieHeader
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        fetch(`${t.baseUrl}/api/user`, { headers: { cookie, accept: 'application/json' } }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(new Set(answers.map((a) => setCookie(a, 'app_session')?.split(';')[0])).size).toBe(1)
    expect(new Set(answers.map((a) => setCookie(a, 'app_remember')?.split(';')[0])).size).toBe(1)
    expect(await rowsOf(t, imported.userId)).toHaveLength(1)
    expect(await devicesOf(t, imported.userId)).toHaveLength(1)
  })

  it('still signs in after the first sign-in rehashed the bcrypt password', async () => {
    const imported = await importUser(t)
    const login = await new TestClient(t.baseUrl).post('/api/login', {
      email: imported.email,
      password: PASSWORD,
    })
    expect(login.status).toBe(200)
    const [user] = await t.database.db.select().from(users).where(eq(users.id, imported.userId))
    expect(user?.password).toMatch(/^\$argon2id\$/)
    expect((await rememberedBrowser(t, imported).get('/api/user')).data.id).toBe(imported.userId)
  })

  it('no longer signs in once the password changed (profile), nor after a reset', async () => {
    const changed = await importUser(t)
    const client = new TestClient(t.baseUrl)
    expect((await client.post('/api/login', { email: changed.email, password: PASSWORD })).status).toBe(200)
    const update = await client.put('/api/user-profile/password', {
      current_password: PASSWORD,
      password: 'a new password 1',
      password_confirmation: 'a new password 1',
    })
    expect(update.status).toBe(200)
    expect((await rememberedBrowser(t, changed).get('/api/user')).status).toBe(401)

    const reset = await importUser(t)
    expect((await resetPasswordByMail(t, sink, reset.email, 'a new password 2')).status).toBe(200)
    expect((await rememberedBrowser(t, reset).get('/api/user')).status).toBe(401)

    const byAdmin = await importUser(t)
    const { client: admin } = await signedInAdmin(t)
    const edit = await admin.put(`/api/users/${byAdmin.userId}`, {
      name: 'Imported Trader',
      email: byAdmin.email,
      password: 'a new password 3',
    })
    expect(edit.status).toBe(200)
    expect((await rememberedBrowser(t, byAdmin).get('/api/user')).status).toBe(401)

    const repo = createImportedUsersRepository({ db: t.database.db })
    for (const { oldId } of [changed, reset, byAdmin]) {
      expect((await repo.findWithUser(oldId))?.imported).toMatchObject({
        rememberTokenDigest: null,
        legacyPasswordHash: null,
      })
    }
  })

  it("no longer signs in any browser once its user logged out, as Laravel's logout cycles the token", async () => {
    const imported = await importUser(t)
    const laptop = rememberedBrowser(t, imported)
    expect((await laptop.get('/api/user')).status).toBe(200)
    expect((await laptop.post('/api/logout', {})).status).toBe(204)
    expect((await rememberedBrowser(t, imported).get('/api/user')).status).toBe(401)
  })

  it('signs in no blocked user', async () => {
    const imported = await importUser(t)
    const block = (blockedAt: Date | null) =>
      t.database.db.update(users).set({ blockedAt }).where(eq(users.id, imported.userId))
    await block(new Date())
    expect((await rememberedBrowser(t, imported).get('/api/user')).status).toBe(401)
    expect(await rowsOf(t, imported.userId)).toEqual([])
    await block(null)
    expect((await rememberedBrowser(t, imported).get('/api/user')).status).toBe(200)
  })
})

describe('the cutover window', () => {
  it("ignores the original's cookies, unopened, once LARAVEL_COOKIES_UNTIL has passed", async () => {
    const short = await buildTestApp({ env: legacyEnv(Date.now() + minutes(5)) })
    try {
      const imported = await importUser(short)
      const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
      await importSession(short, imported.userId, sessionId, csrf)
      const early = oldBrowser(short, sessionId, csrf)
      const oldXsrf = decodeURIComponent(early.cookies.get('XSRF-TOKEN') ?? '')
      expect((await early.get('/api/user')).status).toBe(200)

      short.clock.advance(minutes(6))
      // The imported session itself is still live (6 minutes idle), and reachable by our cookie...
      expect((await early.get('/api/user')).status).toBe(200)
      // ...but no longer by the old one, nor the old XSRF header, nor the old remember cookie.
      const late = oldBrowser(short, sessionId, csrf)
      const res = await late.get('/api/user')
      expect(res.status).toBe(401)
      expect(res.headers.getSetCookie()).toEqual([])
      const write = await early.post('/api/user/settings', {}, { headers: { 'x-xsrf-token': oldXsrf } })
      expect(write.status).toBe(419)
      expect((await rememberedBrowser(short, imported).get('/api/user')).status).toBe(401)
    } finally {
      await short.close()
    }
  })

  it('ignores them when no window is configured, where the same rows and cookies let the user in with one', async () => {
    const plain = await buildTestApp({ database: sharedDatabase(t.database) })
    try {
      const imported = await importUser(t)
      const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
      await importSession(t, imported.userId, sessionId, csrf)
      const res = await oldBrowser(plain, sessionId, csrf).get('/api/user')
      expect(res.status).toBe(401)
      expect(res.headers.getSetCookie()).toEqual([])
      expect((await rememberedBrowser(plain, imported).get('/api/user')).status).toBe(401)
      expect((await oldBrowser(t, sessionId, csrf).get('/api/user')).status).toBe(200)
      expect((await rememberedBrowser(t, imported).get('/api/user')).status).toBe(200)
    } finally {
      await plain.app.close()
    }
  })
})

async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + ms
  do {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  } while (Date.now() < until)
  return check()
}

// Two instances sharing PostgreSQL and Redis, as deployed (the PostgreSQL + Redis run).
describe.each(redisUrl ? [redisUrl] : [])('two instances sharing Redis', (url) => {
  it('land one old cookie on one session whichever instance each request reaches', async () => {
    await withTwoInstances(url, legacyEnv(), async (a, b) => {
      const imported = await importUser(a)
      const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
      await importSession(a, imported.userId, sessionId, csrf)
      const cookie = oldBrowser(a, sessionId, csrf).cookieHeader
      const answers = await Promise.all(
        [a, b, a, b].map((app) =>
          fetch(`${app.baseUrl}/api/user`, { headers: { cookie, accept: 'application/json' } }),
        ),
      )
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200])
      expect(new Set(answers.map((r) => setCookie(r, 'app_session')?.split(';')[0])).size).toBe(1)
      expect(await rowsOf(a, imported.userId)).toHaveLength(1)
    })
  })

  it('end on B, where it was held in memory, an imported session signed out through A', async () => {
    await withTwoInstances(url, legacyEnv(), async (a, b) => {
      const imported = await importUser(a)
      const [sessionId, csrf] = [oldSessionId(), randomSessionToken()]
      await importSession(a, imported.userId, sessionId, csrf)
      const onB = oldBrowser(b, sessionId, csrf)
      expect((await onB.get('/api/user')).status).toBe(200)
      const onA = oldBrowser(a, sessionId, csrf)
      expect((await onA.post('/api/logout', {})).status).toBe(204)
      // B cached the session; the old cookie (still in another tab's jar) finds it gone there too.
      const late = oldBrowser(b, sessionId, csrf)
      expect(await within(250, async () => (await late.get('/api/user')).status === 401)).toBe(true)
      expect((await onB.get('/api/user')).status).toBe(401)
    })
  })
})
