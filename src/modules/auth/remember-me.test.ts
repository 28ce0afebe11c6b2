import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { createUser, signedInAdmin } from '../../../test/helpers/factories.ts'
import { resetPasswordByMail } from '../../../test/helpers/password-reset.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { rememberTokens, sessions } from '../../db/schema/index.ts'

// Past the idle lifetime (120 minutes): the session is over, only "remember me" brings the user back.
const IDLE = minutes(121)
const REMEMBER_MAX_AGE = 576_000 * 60

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')

/** A new browser signed in as `email`, with the "remember me" box ticked or not. */
async function browser(email: string, password: string, remember: boolean) {
  const client = new TestClient(t.baseUrl)
  const res = await client.post('/api/login', { email, password, remember })
  expect(res.status).toBe(200)
  expect(res.data).toEqual({ two_factor: false })
  return { client, login: res }
}

async function rememberedUser() {
  const { user, password } = await createUser(t.database.db)
  const { client, login } = await browser(user.email, password, true)
  return { user, password, client, login }
}

const me = async (client: TestClient) => (await client.get('/api/user')).status
const sessionRowsOf = (userId: number) =>
  t.database.db.select().from(sessions).where(eq(sessions.userId, userId))
const devicesOf = (userId: number) =>
  t.database.db.select().from(rememberTokens).where(eq(rememberTokens.userId, userId))

describe('POST /api/login with remember: true', () => {
  it('sets a long-lived HttpOnly remember cookie, stored only as its hash', async () => {
    const { user, login, client } = await rememberedUser()
    const line = login.headers.getSetCookie().find((l) => l.startsWith('app_remember='))
    expect(line).toBeDefined()
    expect(line).toMatch(new RegExp(`; Max-Age=${REMEMBER_MAX_AGE}(;|$)`))
    expect(line).toMatch(/; HttpOnly(;|$)/)
    expect(line).toMatch(/; SameSite=Lax(;|$)/)
    const value = client.cookies.get('app_remember') ?? ''
    expect(value.length).toBeGreaterThanOrEqual(40)
    const [device] = await devicesOf(user.id)
    expect(device?.id).toBe(sha256(value))
    expect(JSON.stringify(await devicesOf(user.id))).not.toContain(value)
    const [session] = await sessionRowsOf(user.id)
    expect(session?.rememberTokenId).toBe(device?.id)
  })

  it('without the box, sets no remember cookie and the session ends with its idle lifetime', async () => {
    const { user, password } = await createUser(t.database.db)
    const { client, login } = await browser(user.email, password, false)
    expect(login.headers.getSetCookie().some((l) => l.startsWith('app_remember='))).toBe(false)
    expect(await devicesOf(user.id)).toEqual([])
    t.clock.advance(IDLE)
    expect(await me(client)).toBe(401)
  })
})

describe('a remembered device', () => {
  it('is signed in again on a new session once the old one has ended idle, without the password', async () => {
    const { user, client } = await rememberedUser()
    const before = client.cookies.get('app_session')
    t.clock.advance(IDLE)
    const res = await client.get('/api/user')
    expect(res.status).toBe(200)
    expect(res.data.id).toBe(user.id)
    expect(client.cookies.get('app_session')).not.toBe(before)
    const rows = await sessionRowsOf(user.id)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.id).toBe(sha256(client.cookies.get('app_session') ?? ''))
    // The new session is an ordinary one: its own CSRF token works for writes.
    expect((await client.post('/api/user/settings', { restored: true })).status).toBe(200)
  })

  it('comes back again when the session it came back on has ended too, moments later', async () => {
    const { user, client } = await rememberedUser()
    for (let pause = 0; pause < 3; pause += 1) {
      t.clock.advance(IDLE)
      const res = await client.get('/api/user')
      expect(res.status).toBe(200)
      expect(res.data.id).toBe(user.id)
    }
  })

  it('is signed in again after the absolute lifetime too, however active the session was', async () => {
    const { user, client } = await rememberedUser()
    const first = client.cookies.get('app_session')
    for (let hour = 0; hour < 13; hour += 1) {
      t.clock.advance(minutes(60))
      const res = await client.get('/api/user')
      expect(res.status).toBe(200)
      expect(res.data.id).toBe(user.id)
    }
    // At its absolute end the session cookie expired in the browser; the device came back on a new one.
    expect(client.cookies.get('app_session')).not.toBe(first)
  })

  it('answers a write that arrives after the session ended with 419 and fresh cookies, as Laravel; the retry passes', async () => {
    const { client } = await rememberedUser()
    t.clock.advance(IDLE)
    const first = await client.post('/api/user/settings', { late: 1 })
    expect(first.status).toBe(419)
    expect((await client.post('/api/user/settings', { late: 2 })).status).toBe(200)
  })

  it('starts one session for requests that arrive together after the pause', async () => {
    const { user, client } = await rememberedUser()
    t.clock.advance(IDLE)
    const cookie = client.cookieHeader
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        fetch(`${t.baseUrl}/api/user`, { headers: { cookie, accept: 'application/json' } }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    const sessionCookies = new Set(
      answers.map((a) => a.headers.getSetCookie().find((l) => l.startsWith('app_session=')) ?? ''),
    )
    expect(sessionCookies.size).toBe(1)
    expect(await sessionRowsOf(user.id)).toHaveLength(1)
  })

  it('stops working after REMEMBER_LIFETIME, and its cookie is cleared', async () => {
    const short = await buildTestApp({ env: { REMEMBER_LIFETIME: '180' } })
    try {
      const { user, password } = await createUser(short.database.db)
      const client = new TestClient(short.baseUrl)
      const login = await client.post('/api/login', { email: user.email, password, remember: true })
      expect(login.headers.getSetCookie().find((l) => l.startsWith('app_remember='))).toMatch(
        /; Max-Age=10800;/,
      )
      short.clock.advance(IDLE)
      expect(await me(client)).toBe(200)
      // Past REMEMBER_LIFETIME, once the session it started has ended too.
      short.clock.advance(IDLE)
      const res = await client.get('/api/user')
      expect(res.status).toBe(401)
      expect(res.headers.getSetCookie().some((l) => /^app_remember=; Max-Age=0/.test(l))).toBe(true)
      expect(client.cookies.has('app_remember')).toBe(false)
    } finally {
      await short.close()
    }
  })

  it('is forgotten at logout: the cookie is cleared, and the old value replayed brings nobody back', async () => {
    const { user, client } = await rememberedUser()
    const value = client.cookies.get('app_remember') ?? ''
    const out = await client.post('/api/logout')
    expect(out.status).toBe(204)
    expect(out.headers.getSetCookie().some((l) => /^app_remember=; Max-Age=0/.test(l))).toBe(true)
    expect(await devicesOf(user.id)).toEqual([])
    const replay = await fetch(`${t.baseUrl}/api/user`, {
      headers: { cookie: `app_remember=${value}`, accept: 'application/json' },
    })
    expect(replay.status).toBe(401)
    expect(await sessionRowsOf(user.id)).toEqual([])
  })

  it('brings nobody back with an unknown or altered cookie, and starts no session for it', async () => {
    const { user, client } = await rememberedUser()
    const value = client.cookies.get('app_remember') ?? ''
    for (const forged of [`${value.slice(0, -1)}${value.endsWith('A') ? 'B' : 'A'}`, 'x', 'y'.repeat(500)]) {
      const res = await fetch(`${t.baseUrl}/api/user`, {
        headers: { cookie: `app_remember=${forged}`, accept: 'application/json' },
      })
      expect(res.status).toBe(401)
      expect(res.headers.getSetCookie().some((l) => /^app_remember=; Max-Age=0/.test(l))).toBe(true)
    }
    expect(await sessionRowsOf(user.id)).toHaveLength(1)
  })

  it('signing in as someone else on the same browser forgets the first user', async () => {
    const first = await rememberedUser()
    const other = await createUser(t.database.db)
    const res = await first.client.post('/api/login', { email: other.user.email, password: other.password })
    expect(res.status).toBe(200)
    expect(first.client.cookies.has('app_remember')).toBe(false)
    expect(await devicesOf(first.user.id)).toEqual([])
  })
})

describe('what ends a remembered device', () => {
  it("a password change forgets the user's other devices and keeps the changer's own", async () => {
    const { user, password, client: mine } = await rememberedUser()
    const { client: theirs } = await browser(user.email, password, true)
    const res = await mine.put('/api/user-profile/password', {
      current_password: password,
      password: 'another long secret',
      password_confirmation: 'another long secret',
    })
    expect(res.status).toBe(200)
    t.clock.advance(IDLE)
    expect(await me(theirs)).toBe(401)
    expect(await me(mine)).toBe(200)
  })

  it('a password reset forgets every device', async () => {
    const { user, client } = await rememberedUser()
    const reset = await resetPasswordByMail(t, sink, user.email, 'a reset long secret')
    expect(reset.status).toBe(200)
    t.clock.advance(IDLE)
    expect(await me(client)).toBe(401)
    expect(await devicesOf(user.id)).toEqual([])
  })

  it('"log out other browser sessions" forgets the other devices and keeps this one', async () => {
    const { user, password, client: mine } = await rememberedUser()
    const { client: theirs } = await browser(user.email, password, true)
    const res = await mine.post('/api/user-profile/logout-other-sessions', { password })
    expect(res.status).toBe(200)
    expect(await me(theirs)).toBe(401)
    t.clock.advance(IDLE)
    expect(await me(theirs)).toBe(401)
    expect(await me(mine)).toBe(200)
    expect(await devicesOf(user.id)).toHaveLength(1)
  })

  it('being blocked by an admin, and the account deleted', async () => {
    const { user, client } = await rememberedUser()
    const admin = async () => (await signedInAdmin(t)).client
    expect((await (await admin()).post(`/api/user/block-unblock/${user.id}`, {})).status).toBe(200)
    expect(await me(client)).toBe(401)
    // Unblocked again: the device was forgotten at the block, and stays so.
    expect((await (await admin()).post(`/api/user/block-unblock/${user.id}`, {})).status).toBe(200)
    t.clock.advance(IDLE)
    expect(await me(client)).toBe(401)

    const gone = await rememberedUser()
    expect((await (await admin()).delete(`/api/users/${gone.user.id}`)).status).toBe(200)
    t.clock.advance(IDLE)
    expect(await me(gone.client)).toBe(401)
    expect(await devicesOf(gone.user.id)).toEqual([])
  })
})

describe('remember me with two-factor authentication', () => {
  it('remembers the device once the challenge is passed, when the password step asked to', async () => {
    const { user, password, client: setup } = await rememberedUser()
    await setup.post('/api/user/confirm-password', { password })
    const enabled = await setup.post('/api/user/two-factor-authentication', { password })
    const secret = Secret.fromBase32(enabled.data.secret)
    const code = (offset = 0) => TOTP.generate({ secret, timestamp: t.clock.nowMs() + offset })
    expect((await setup.post('/api/user/confirmed-two-factor-authentication', { code: code() })).status).toBe(
      200,
    )
    t.clock.advance(30_000)

    for (const remember of [true, false]) {
      const client = new TestClient(t.baseUrl)
      const pending = await client.post('/api/login', { email: user.email, password, remember })
      expect(pending.data).toEqual({ two_factor: true })
      expect(client.cookies.has('app_remember')).toBe(false)
      const passed = await client.post('/api/two-factor-challenge', { code: code() })
      expect(passed.status).toBe(200)
      t.clock.advance(30_000)
      expect(client.cookies.has('app_remember')).toBe(remember)
      t.clock.advance(IDLE)
      expect(await me(client)).toBe(remember ? 200 : 401)
    }
  })
})

describe('GET /api/user-profile/sessions', () => {
  it('marks remembered sessions, and lists a remembered device whose session has ended', async () => {
    const { user, password, client: laptop } = await rememberedUser()
    t.clock.advance(minutes(150))
    const { client: phone } = await browser(user.email, password, false)
    const res = await phone.get('/api/user-profile/sessions')
    expect(res.status).toBe(200)
    expect(
      res.data.map((s: { is_current_device: boolean; remembered: boolean; last_active: string }) => [
        s.is_current_device,
        s.remembered,
        s.last_active,
      ]),
    ).toEqual([
      [true, false, '0 seconds ago'],
      [false, true, '2 hours ago'],
    ])
    // The laptop comes back on its own session; still one entry for it.
    t.clock.advance(minutes(1))
    expect(await me(laptop)).toBe(200)
    const again = await laptop.get('/api/user-profile/sessions')
    expect(
      again.data.map((s: { is_current_device: boolean; remembered: boolean }) => [
        s.is_current_device,
        s.remembered,
      ]),
    ).toEqual([
      [true, true],
      [false, false],
    ])
  })
})
