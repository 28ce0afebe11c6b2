import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { minutes } from '../../test/helpers/clock.ts'
import { signedInAdmin, signedInClient } from '../../test/helpers/factories.ts'
import { sharedDatabase } from '../../test/helpers/test-database.ts'
import { appUnderTest, mailSinkUnderTest } from '../../test/helpers/under-test.ts'
import { sessions, users } from '../db/schema/index.ts'
import { unixSeconds } from '../lib/clock.ts'
import { SESSION_CACHE_TTL_MS } from '../lib/session-cache.ts'

// Each test first reads /api/user, so its session sits in the instance's short session cache; the
// change that follows must be honoured by the very next request, not one cache lifetime later.

/** Another browser holding the same cookies (a stolen or copied session). */
function twinOf(client: TestClient, baseUrl: string): TestClient {
  const twin = new TestClient(baseUrl)
  for (const [name, value] of client.cookies) twin.cookies.set(name, value)
  return twin
}

/** Asks until `check` holds, for at most `ms`; answers whether it did. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + ms
  do {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  } while (Date.now() < until)
  return check()
}

describe('session cache, one instance', () => {
  const sink = mailSinkUnderTest()
  const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))

  it('refuses a user blocked by an admin on the next request', async () => {
    const { client } = await signedInClient(t, { verified: true })
    const { client: admin } = await signedInAdmin(t)
    const me = await client.get('/api/user')
    expect(me.status).toBe(200)
    expect((await admin.post(`/api/user/block-unblock/${me.data.id}`, {})).status).toBe(200)
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('refuses a user deleted by an admin on the next request', async () => {
    const { client, user } = await signedInClient(t, { verified: true })
    const { client: admin } = await signedInAdmin(t)
    expect((await client.get('/api/user')).status).toBe(200)
    expect((await admin.delete(`/api/users/${user.id}`)).status).toBe(200)
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('refuses a user who deleted their account, on the copied cookie too', async () => {
    const { client, password } = await signedInClient(t)
    const twin = twinOf(client, t.baseUrl)
    expect((await twin.get('/api/user')).status).toBe(200)
    expect((await client.delete('/api/user-profile', { password })).status).toBe(200)
    expect((await twin.get('/api/user')).status).toBe(401)
  })

  it('ends every session at once when the password is reset', async () => {
    const { client, user } = await signedInClient(t)
    expect((await client.get('/api/user')).status).toBe(200)
    expect((await new TestClient(t.baseUrl).post('/api/password/email', { email: user.email })).status).toBe(
      200,
    )
    const mail = await sink.waitFor((m) => m.to.includes(user.email) && /reset-password\?/.test(m.text))
    const link = new URL(mail.text.match(/http\S+\/reset-password\?\S+/)?.[0] ?? '')
    const res = await new TestClient(t.baseUrl).post('/api/password/reset', {
      token: link.searchParams.get('token'),
      email: user.email,
      password: 'a brand new password',
      password_confirmation: 'a brand new password',
    })
    expect(res.status).toBe(200)
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('ends the other sessions at once when they are logged out from another browser', async () => {
    const { client, user, password } = await signedInClient(t)
    const other = new TestClient(t.baseUrl)
    expect((await other.post('/api/login', { email: user.email, password })).status).toBe(200)
    expect((await other.get('/api/user')).status).toBe(200)
    expect((await client.post('/api/user-profile/logout-other-sessions', { password })).status).toBe(200)
    expect((await other.get('/api/user')).status).toBe(401)
    expect((await client.get('/api/user')).status).toBe(200)
  })

  it('refuses the old cookie right after logout', async () => {
    const { client } = await signedInClient(t)
    const twin = twinOf(client, t.baseUrl)
    expect((await twin.get('/api/user')).status).toBe(200)
    expect((await client.post('/api/logout', {})).status).toBe(204)
    expect((await twin.get('/api/user')).status).toBe(401)
  })

  it('answers a profile change on the next read', async () => {
    const { client, user } = await signedInClient(t)
    expect((await client.get('/api/user')).data.name).toBe(user.name)
    const res = await client.put('/api/user-profile/profile-information', {
      name: 'Renamed',
      email: user.email,
    })
    expect(res.status).toBe(200)
    expect((await client.get('/api/user')).data.name).toBe('Renamed')
  })

  it('still expires an idle session and keeps a used one alive, while cached', async () => {
    const { client } = await signedInClient(t)
    expect((await client.get('/api/user')).status).toBe(200)
    t.clock.advance(minutes(119))
    expect((await client.get('/api/user')).status).toBe(200)
    t.clock.advance(minutes(119))
    expect((await client.get('/api/user')).status).toBe(200)
    t.clock.advance(minutes(121))
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('ends a session 12 hours after it began (SESSION_ABSOLUTE_LIFETIME), however active, while cached', async () => {
    const { client } = await signedInClient(t)
    // A request every 110 minutes keeps it from idling out (120); 660 minutes in, it still lives.
    for (let elapsed = 110; elapsed <= 660; elapsed += 110) {
      t.clock.advance(minutes(110))
      expect((await client.get('/api/user')).status).toBe(200)
    }
    t.clock.advance(minutes(61))
    const ended = await client.get('/api/user')
    expect(ended.status).toBe(401)
    expect(ended.headers.getSetCookie().some((line) => line.startsWith('app_session=;'))).toBe(true)
    // Signing in again starts a new session, with a new 12 hours.
    const { client: again } = await signedInClient(t)
    expect((await again.get('/api/user')).status).toBe(200)
  })

  it('takes SESSION_ABSOLUTE_LIFETIME in minutes; the cookies expire with it when it comes first', async () => {
    const short = await buildTestApp({
      env: { SESSION_ABSOLUTE_LIFETIME: '30' },
      database: sharedDatabase(t.database),
    })
    try {
      const { client } = await signedInClient(short)
      short.clock.advance(minutes(25))
      const res = await client.get('/api/user')
      expect(res.status).toBe(200)
      const cookies = res.headers.getSetCookie()
      expect(cookies.find((line) => line.startsWith('app_session='))).toMatch(/; Max-Age=300;/)
      expect(cookies.find((line) => line.startsWith('XSRF-TOKEN='))).toMatch(/; Max-Age=300;/)
      short.clock.advance(minutes(5) + 1000)
      expect((await client.get('/api/user')).status).toBe(401)
    } finally {
      await short.close()
    }
  })

  it('honours a change nobody announced (made in SQL) within the cache lifetime', async () => {
    const { client, user } = await signedInClient(t)
    expect((await client.get('/api/user')).status).toBe(200)
    await t.database.db.update(users).set({ blockedAt: new Date() }).where(eq(users.id, user.id))
    const refused = await within(
      SESSION_CACHE_TTL_MS + 500,
      async () => (await client.get('/api/user')).status === 401,
    )
    expect(refused).toBe(true)
  })
})

const redisUrl = process.env.TEST_REDIS_URL
// Joins the run when it has a Redis (CI's PostgreSQL+Redis run), as the other shared-state tests do.
describe.each(redisUrl ? ['redis'] : [])('session cache, two instances sharing %s', () => {
  let cleaner: Redis
  const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
  const connect = () => new Redis(redisUrl ?? '', { keyPrefix })
  // Pub/sub is one asynchronous hop: B acts when its event loop reads the message, so allow a moment.
  const HOP_MS = 250

  beforeAll(() => {
    cleaner = connect()
  })
  // After both instances have closed (hooks after run in reverse).
  afterAll(async () => {
    const keys = await cleaner.keys(`${keyPrefix}*`)
    if (keys.length > 0) await cleaner.del(...keys.map((key) => key.slice(keyPrefix.length)))
    await cleaner.quit()
  })
  const a = appUnderTest(() => ({ redis: connect() }))
  const b = appUnderTest(() => ({ redis: connect(), database: sharedDatabase(a.database) }))

  it('honours on instance B a sign-out made through instance A', async () => {
    const { client: onA } = await signedInClient(a)
    const onB = twinOf(onA, b.baseUrl)
    expect((await onB.get('/api/user')).status).toBe(200)
    expect((await onA.post('/api/logout', {})).status).toBe(204)
    expect(await within(HOP_MS, async () => (await onB.get('/api/user')).status === 401)).toBe(true)
  })

  it('honours on instance B a block made through instance A', async () => {
    const { client: onA } = await signedInClient(a, { verified: true })
    const onB = twinOf(onA, b.baseUrl)
    const me = await onB.get('/api/user')
    expect(me.status).toBe(200)
    const { client: admin } = await signedInAdmin(a)
    expect((await admin.post(`/api/user/block-unblock/${me.data.id}`, {})).status).toBe(200)
    expect(await within(HOP_MS, async () => (await onB.get('/api/user')).status === 401)).toBe(true)
  })
})

describe('the sweep of idle sessions', () => {
  it('deletes sessions idle past the lifetime or past the absolute one in the background once the app is up, with no request', async () => {
    const a = await buildTestApp()
    try {
      const now = unixSeconds(a.clock)
      const id = () => randomBytes(32).toString('hex')
      const [idle, live] = [id(), id()]
      const row = (sessionId: string, idleMinutes: number) => ({
        id: sessionId,
        userId: null,
        ipAddress: null,
        userAgent: null,
        payload: { csrfToken: 'token' },
        lastActivity: now - idleMinutes * 60,
      })
      // Active a minute ago, but begun more than 12 hours ago (SESSION_ABSOLUTE_LIFETIME).
      const old = id()
      const tooOld = { ...row(old, 1), createdAt: now - 721 * 60 }
      // Stored behind A's back, after its own start: nobody asks for them.
      await a.database.db.insert(sessions).values([row(idle, 121), row(live, 119), tooOld])
      const stored = async (sessionId: string) =>
        (await a.database.db.select().from(sessions).where(eq(sessions.id, sessionId))).length === 1
      const b = await buildTestApp({ database: sharedDatabase(a.database) })
      try {
        expect(await within(5_000, async () => !(await stored(idle)))).toBe(true)
        expect(await stored(old)).toBe(false)
        expect(await stored(live)).toBe(true)
      } finally {
        await b.close()
      }
    } finally {
      await a.close()
    }
  })
})
