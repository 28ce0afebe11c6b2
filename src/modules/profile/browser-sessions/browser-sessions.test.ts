import { describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { minutes } from '../../../../test/helpers/clock.ts'
import { createUser, signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'

const laravelDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const DAY = 24 * 60 * 60_000

const t = appUnderTest()

/** Signs `email` in on a new client sending `userAgent`, as another browser would. */
async function signIn(
  app: TestApp,
  email: string,
  password: string,
  userAgent?: string,
): Promise<TestClient> {
  const client = new TestClient(app.baseUrl)
  const headers = userAgent === undefined ? undefined : { 'user-agent': userAgent }
  await client.csrf()
  const res = await client.post('/api/login', { email, password }, { headers })
  expect(res.status).toBe(200)
  return client
}

const list = async (client: TestClient) => {
  const res = await client.get('/api/user-profile/sessions')
  expect(res.status).toBe(200)
  return res.data as {
    agent: { is_desktop: boolean; platform: string | null; browser: string | null }
    ip_address: string | null
    is_current_device: boolean
    last_active: string
    last_active_at: string
  }[]
}

describe('GET /api/user-profile/sessions', () => {
  it("lists the user's own sessions, the current one marked, the most recent first", async () => {
    const { user, password } = await createUser(t.database.db)
    const laptop = await signIn(t, user.email, password)
    t.clock.advance(minutes(5))
    const phone = await signIn(t, user.email, password)
    t.clock.advance(minutes(2))
    const sessions = await list(phone)
    expect(sessions).toEqual([
      {
        agent: expect.any(Object),
        ip_address: '127.0.0.1',
        is_current_device: true,
        last_active: '0 seconds ago',
        last_active_at: expect.stringMatching(laravelDate),
        remembered: false,
      },
      {
        agent: expect.any(Object),
        ip_address: '127.0.0.1',
        is_current_device: false,
        last_active: '7 minutes ago',
        last_active_at: expect.stringMatching(laravelDate),
        remembered: false,
      },
    ])
    const now = Math.floor(t.clock.nowMs() / 1000) * 1000
    expect(Date.parse(sessions[0]?.last_active_at ?? '')).toBe(now)
    expect(Date.parse(sessions[1]?.last_active_at ?? '')).toBe(now - minutes(7))
    // A request a minute later makes the laptop the most recently active.
    t.clock.advance(minutes(1))
    const fromLaptop = await list(laptop)
    expect(fromLaptop.map((s) => [s.is_current_device, s.last_active])).toEqual([
      [true, '0 seconds ago'],
      [false, '1 minute ago'],
    ])
  })

  it('never shows the sessions of anyone else, nor guest sessions', async () => {
    const mine = await signedInClient(t)
    const theirs = await signedInClient(t)
    await signIn(t, theirs.user.email, theirs.password)
    await new TestClient(t.baseUrl).csrf()
    expect(await list(mine.client)).toHaveLength(1)
    expect(await list(theirs.client)).toHaveLength(2)
  })

  it('leaves out sessions idle past the session lifetime', async () => {
    const { user, password } = await createUser(t.database.db)
    await signIn(t, user.email, password)
    t.clock.advance(minutes(121))
    const fresh = await signIn(t, user.email, password)
    const sessions = await list(fresh)
    expect(sessions.map((s) => s.is_current_device)).toEqual([true])
  })

  it.each([
    [
      'Chrome on macOS',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      { platform: 'OS X', browser: 'Chrome', is_desktop: true },
    ],
    [
      'Safari on macOS',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
      { platform: 'OS X', browser: 'Safari', is_desktop: true },
    ],
    [
      'Firefox on Windows',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0',
      { platform: 'Windows', browser: 'Firefox', is_desktop: true },
    ],
    [
      'Edge on Windows',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.51',
      { platform: 'Windows', browser: 'Edge', is_desktop: true },
    ],
    [
      'Opera on Windows',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/109.0.0.0',
      { platform: 'Windows', browser: 'Opera', is_desktop: true },
    ],
    [
      'Internet Explorer 11',
      'Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko',
      { platform: 'Windows', browser: 'IE', is_desktop: true },
    ],
    [
      'Firefox on Ubuntu',
      'Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
      { platform: 'Ubuntu', browser: 'Firefox', is_desktop: true },
    ],
    [
      'Chrome on Linux',
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      { platform: 'Linux', browser: 'Chrome', is_desktop: true },
    ],
    [
      'Chrome on ChromeOS',
      'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      { platform: 'ChromeOS', browser: 'Chrome', is_desktop: true },
    ],
    [
      'Safari on iPhone',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
      { platform: 'iOS', browser: 'Safari', is_desktop: false },
    ],
    [
      'Chrome on iPhone',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1',
      { platform: 'iOS', browser: 'Chrome', is_desktop: false },
    ],
    [
      'Safari on iPad',
      'Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
      { platform: 'iOS', browser: 'Safari', is_desktop: false },
    ],
    [
      'Chrome on an Android phone',
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
      { platform: 'AndroidOS', browser: 'Chrome', is_desktop: false },
    ],
    [
      'Chrome on an Android tablet',
      'Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      { platform: 'AndroidOS', browser: 'Chrome', is_desktop: false },
    ],
    ['curl', 'curl/8.5.0', { platform: null, browser: null, is_desktop: true }],
  ])('describes %s as Jetstream does', async (_, userAgent, agent) => {
    const { user, password } = await createUser(t.database.db)
    const client = await signIn(t, user.email, password, userAgent)
    const [session] = await list(client)
    expect(session?.agent).toEqual(agent)
  })

  it('says how long ago each session was active, as Carbon does', async () => {
    const long = await buildTestApp({
      env: { SESSION_LIFETIME: '999999', SESSION_ABSOLUTE_LIFETIME: '999999' },
    })
    try {
      const { user, password } = await createUser(long.database.db)
      await signIn(long, user.email, password)
      const signedInAt = long.clock.nowMs()
      const viewer = await signIn(long, user.email, password)
      const idle = async () => (await list(viewer)).find((s) => !s.is_current_device)?.last_active
      const after = (ms: number) => long.clock.advance(signedInAt + ms - long.clock.nowMs())
      const expected: [number, string][] = [
        [0, '0 seconds ago'],
        [1000, '1 second ago'],
        [59_000, '59 seconds ago'],
        [minutes(1), '1 minute ago'],
        [minutes(59) + 59_000, '59 minutes ago'],
        [minutes(60), '1 hour ago'],
        [minutes(120), '2 hours ago'],
        [DAY - 1000, '23 hours ago'],
        [DAY, '1 day ago'],
        [7 * DAY - 1000, '6 days ago'],
        [7 * DAY, '1 week ago'],
        [21 * DAY, '3 weeks ago'],
        [32 * DAY, '1 month ago'],
        [70 * DAY, '2 months ago'],
        [400 * DAY, '1 year ago'],
      ]
      for (const [ms, text] of expected) {
        after(ms)
        expect(await idle(), text).toBe(text)
      }
    } finally {
      await long.close()
    }
  })
})

describe('POST /api/user-profile/logout-other-sessions', () => {
  it('refuses a wrong or missing password and ends nothing', async () => {
    const { client, user, password } = await signedInClient(t)
    const other = await signIn(t, user.email, password)
    const wrong = await client.post('/api/user-profile/logout-other-sessions', { password: 'not it' })
    expect(wrong.status).toBe(422)
    expect(wrong.data).toEqual({
      message: 'The password is incorrect.',
      errors: { password: ['The password is incorrect.'] },
    })
    const missing = await client.post('/api/user-profile/logout-other-sessions', {})
    expect(missing.status).toBe(422)
    expect(missing.data.errors).toEqual({ password: ['The password field is required.'] })
    expect((await other.get('/api/user')).status).toBe(200)
    expect(await list(client)).toHaveLength(2)
  })

  it("ends every other session of the user, keeps this one, and touches nobody else's", async () => {
    const { client, user, password } = await signedInClient(t)
    const laptop = await signIn(t, user.email, password)
    const tablet = await signIn(t, user.email, password)
    const stranger = await signedInClient(t)
    const strangerElsewhere = await signIn(t, stranger.user.email, stranger.password)

    const res = await client.post('/api/user-profile/logout-other-sessions', { password })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Your other browser sessions have been logged out.' })
    expect((await laptop.get('/api/user')).status).toBe(401)
    expect((await tablet.get('/api/user')).status).toBe(401)
    expect((await client.get('/api/user')).data.id).toBe(user.id)
    expect((await list(client)).map((s) => s.is_current_device)).toEqual([true])
    expect((await strangerElsewhere.get('/api/user')).data.id).toBe(stranger.user.id)
    expect(await list(stranger.client)).toHaveLength(2)
  })

  it("cannot end another user's sessions with that user's password", async () => {
    const victim = await signedInClient(t)
    const { client } = await signedInClient(t, { password: 'a different secret' })
    const res = await client.post('/api/user-profile/logout-other-sessions', { password: victim.password })
    expect(res.status).toBe(422)
    expect((await victim.client.get('/api/user')).status).toBe(200)
  })
})
