import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { Redis } from 'ioredis'
import { Secret, TOTP } from 'otpauth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testConfig } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { confirmPassword, signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import { sharedDatabase } from '../../../test/helpers/test-database.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { ConfigError } from '../../config.ts'
import { users } from '../../db/schema/index.ts'

const t = appUnderTest()

const REQUIRED = { message: 'Password confirmation required.' }
const status = (client: TestClient) => client.get('/api/user/confirmed-password-status')
const row = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]

describe('POST /api/user/confirm-password', () => {
  it('answers 201 with an empty body to the right password, and the session is then confirmed', async () => {
    const { client, password } = await signedInClient(t)
    expect((await status(client)).data).toEqual({ confirmed: false })
    const res = await client.post('/api/user/confirm-password', { password })
    expect(res.status).toBe(201)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(res.text).toBe('""')
    expect((await status(client)).data).toEqual({ confirmed: true })
  })

  it("refuses a wrong password with Fortify's 422 on `password`, and a missing one; nothing is confirmed", async () => {
    const { client } = await signedInClient(t)
    const wrong = await client.post('/api/user/confirm-password', { password: 'not my password' })
    expect(wrong.status).toBe(422)
    expect(wrong.data).toEqual({
      message: 'The provided password was incorrect.',
      errors: { password: ['The provided password was incorrect.'] },
    })
    const missing = await client.post('/api/user/confirm-password', {})
    expect(missing.status).toBe(422)
    expect(missing.data.errors).toEqual({ password: ['The password field is required.'] })
    expect((await status(client)).data).toEqual({ confirmed: false })
  })

  it('answers 401 to a guest and 419 without the CSRF token', async () => {
    const guest = await new TestClient(t.baseUrl).post('/api/user/confirm-password', { password: 'x' })
    expect(guest.status).toBe(401)
    expect((await new TestClient(t.baseUrl).get('/api/user/confirmed-password-status')).status).toBe(401)
    const { client, password } = await signedInClient(t)
    const noToken = await client.post('/api/user/confirm-password', { password }, { withoutCsrf: true })
    expect(noToken.status).toBe(419)
    expect((await status(client)).data).toEqual({ confirmed: false })
  })

  it('is throttled per user: past the limit even the right password answers 429', async () => {
    const { client, password } = await signedInClient(t)
    let res = await client.post('/api/user/confirm-password', { password: 'guess' })
    for (let i = 0; i < 30 && res.status === 422; i++) {
      res = await client.post('/api/user/confirm-password', { password: 'guess' })
    }
    expect(res.status).toBe(429)
    expect(res.data).toEqual({ message: 'Too Many Attempts.' })
    expect((await client.post('/api/user/confirm-password', { password })).status).toBe(429)
    expect((await status(client)).data).toEqual({ confirmed: false })
  })

  it("confirms only this session: the same user's other browser, and a new sign-in, start unconfirmed", async () => {
    const { client, user, password } = await signedInClient(t)
    await confirmPassword(client, password)
    const other = new TestClient(t.baseUrl)
    expect((await other.post('/api/login', { email: user.email, password })).status).toBe(200)
    expect((await status(other)).data).toEqual({ confirmed: false })
    // Signing in again on the confirmed browser gives a new session, unconfirmed.
    expect((await client.post('/api/login', { email: user.email, password })).status).toBe(200)
    expect((await status(client)).data).toEqual({ confirmed: false })
  })
})

describe('GET /api/user/confirmed-password-status', () => {
  it('lasts PASSWORD_TIMEOUT seconds (10,800 by default), however active the session is', async () => {
    const { client, password } = await signedInClient(t)
    await confirmPassword(client, password)
    // Kept alive within the 120-minute idle lifetime, up to the last second of the 3 hours.
    t.clock.advance(minutes(100))
    expect((await status(client)).data).toEqual({ confirmed: true })
    t.clock.advance(minutes(80) - 1000)
    expect((await status(client)).data).toEqual({ confirmed: true })
    t.clock.advance(1000)
    expect((await status(client)).data).toEqual({ confirmed: false })
  })

  it('answers for a shorter window when asked with `seconds`, as Fortify', async () => {
    const { client, password } = await signedInClient(t)
    await confirmPassword(client, password)
    t.clock.advance(61_000)
    expect((await client.get('/api/user/confirmed-password-status?seconds=60')).data).toEqual({
      confirmed: false,
    })
    expect((await client.get('/api/user/confirmed-password-status?seconds=120')).data).toEqual({
      confirmed: true,
    })
    const bad = await client.get('/api/user/confirmed-password-status?seconds=soon')
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.data.errors)).toEqual(['seconds'])
  })
})

const redisUrl = process.env.TEST_REDIS_URL
// Joins the run when it has a Redis (the PostgreSQL+Redis run), as the other shared-state tests do.
describe.each(redisUrl ? ['redis'] : [])('two instances sharing %s', () => {
  let cleaner: Redis
  const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
  const connect = () => new Redis(redisUrl ?? '', { keyPrefix })

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

  it('a confirmation made through one instance counts on the other, which had the session cached', async () => {
    const { client: onA, password } = await signedInClient(a)
    const onB = new TestClient(b.baseUrl)
    for (const [name, value] of onA.cookies) onB.cookies.set(name, value)
    expect((await status(onB)).data).toEqual({ confirmed: false })
    await confirmPassword(onA, password)
    // Pub/sub is one asynchronous hop: B acts when its event loop reads the message.
    const until = Date.now() + 250
    let confirmed = false
    while (!confirmed && Date.now() < until) confirmed = (await status(onB)).data.confirmed
    expect(confirmed).toBe(true)
    expect((await onB.get('/api/user/two-factor-recovery-codes')).status).toBe(200)
  })
})

describe('PASSWORD_TIMEOUT', () => {
  it('defaults to 10,800 seconds and takes a positive whole number of seconds', () => {
    expect(testConfig().passwordTimeoutSeconds).toBe(10_800)
    expect(testConfig({ PASSWORD_TIMEOUT: '900' }).passwordTimeoutSeconds).toBe(900)
    for (const bad of ['0', '-5', '1.5', 'three hours']) {
      expect(() => testConfig({ PASSWORD_TIMEOUT: bad }), bad).toThrow(ConfigError)
    }
  })
})

describe('the actions that need a recent confirmation', () => {
  /** The 2FA routes, with a body each would accept. */
  const twoFactorRoutes = [
    ['POST', '/api/user/two-factor-authentication', {}],
    ['POST', '/api/user/confirmed-two-factor-authentication', { code: '123456' }],
    ['DELETE', '/api/user/two-factor-authentication', {}],
    ['GET', '/api/user/two-factor-recovery-codes', undefined],
    ['POST', '/api/user/two-factor-recovery-codes', {}],
  ] as const

  const send = (client: TestClient, method: string, path: string, body?: object) =>
    client.request(method, path, body)

  it.each(twoFactorRoutes)(
    '%s %s answers 423 without one, and changes nothing',
    async (method, path, body) => {
      const { client, user } = await signedInClient(t)
      const before = await row(user.id)
      const res = await send(client, method, path, body)
      expect(res.status).toBe(423)
      expect(res.data).toEqual(REQUIRED)
      expect(await row(user.id)).toEqual(before)
    },
  )

  it('answers 423 before judging the body, and 401 (not 423) to a guest', async () => {
    const { client } = await signedInClient(t)
    const garbage = await client.post('/api/user/two-factor-authentication', {
      password: { not: 'a string' },
    })
    expect(garbage.status).toBe(423)
    const guest = await new TestClient(t.baseUrl).get('/api/user/two-factor-recovery-codes')
    expect(guest.status).toBe(401)
  })

  it('lets 2FA be set up, read, regenerated and turned off once confirmed, and no longer once it lapses', async () => {
    const { client, password } = await signedInClient(t)
    await confirmPassword(client, password)
    const enabled = await client.post('/api/user/two-factor-authentication', {})
    expect(enabled.status).toBe(200)
    const code = TOTP.generate({
      secret: Secret.fromBase32(enabled.data.secret),
      timestamp: t.clock.nowMs(),
    })
    expect((await client.post('/api/user/confirmed-two-factor-authentication', { code })).status).toBe(200)
    expect((await client.get('/api/user/two-factor-recovery-codes')).data).toEqual(
      enabled.data.recovery_codes,
    )
    expect((await client.post('/api/user/two-factor-recovery-codes', {})).status).toBe(200)

    // Three hours later (the session kept alive meanwhile) the confirmation has lapsed.
    for (let i = 0; i < 3; i++) {
      t.clock.advance(minutes(60))
      expect((await client.get('/api/user')).status).toBe(200)
    }
    const codes = await client.get('/api/user/two-factor-recovery-codes')
    expect(codes.status).toBe(423)
    expect(codes.data).toEqual(REQUIRED)
    expect((await client.delete('/api/user/two-factor-authentication', {})).status).toBe(423)
    expect((await client.get('/api/user')).data.two_factor_enabled).toBe(true)

    await confirmPassword(client, password)
    expect((await client.delete('/api/user/two-factor-authentication', {})).status).toBe(200)
    expect((await client.get('/api/user')).data.two_factor_enabled).toBe(false)
  })

  it.each(['/api/user-profile/profile-information', '/api/user-profile/profile'])(
    'PUT %s: a new email address needs one (423, nothing saved); other changes do not',
    async (path) => {
      const { client, user, password } = await signedInClient(t, { verified: true })
      const email = uniqueEmail('new-address')
      const refused = await client.put(path, { name: 'Renamed', email })
      expect(refused.status).toBe(423)
      expect(refused.data).toEqual(REQUIRED)
      expect(await row(user.id)).toMatchObject({ name: user.name, email: user.email, pendingEmail: null })

      const renamed = await client.put(path, { name: 'Renamed', email: user.email.toUpperCase() })
      expect(renamed.status).toBe(200)
      expect(renamed.data).toMatchObject({ name: 'Renamed', email: user.email })

      await confirmPassword(client, password)
      const changed = await client.put(path, { name: 'Renamed', email })
      expect(changed.status).toBe(200)
      expect((await row(user.id))?.pendingEmail).toBe(email)
    },
  )
})
