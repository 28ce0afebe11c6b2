import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { Secret, TOTP } from 'otpauth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { type ClientResponse, TestClient } from '../../../test/helpers/client.ts'
import { confirmPassword, createUser, signedInClient } from '../../../test/helpers/factories.ts'
import { resetPasswordByMail } from '../../../test/helpers/password-reset.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import type { UserRow } from '../../db/schema/index.ts'
import { encryptSecret } from '../../lib/encryption.ts'
import { DEVICE_ATTEMPTS } from './auth.backoff.ts'
import { DEVICE_COOKIE, DEVICE_LIFETIME_SECONDS } from './auth.device-cookie.ts'

// Issue 38 item 4: a stranger's wrong passwords paused the owner's logins everywhere. A browser the
// owner signed in with before (its device cookie) now gets past the pause; a password reset ends it.
const sink = mailSinkUnderTest()
const env = () => ({ MAIL_URL: sink.url, TRUSTED_PROXIES: '127.0.0.1' })
const redisUrl = process.env.TEST_REDIS_URL

/** Where the stranger guesses and where the owner signs in: one app, or two instances sharing Redis. */
interface Instances {
  stranger: TestApp
  owner: TestApp
}

function oneInstance(): Instances {
  const t = appUnderTest(() => ({ env: env() }))
  return { stranger: t, owner: t }
}

/** Two instances on one database and one Redis (a key space of their own), for the file's tests. */
function twoInstancesSharingRedis(url: string): Instances {
  const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
  let made: Instances | undefined
  beforeAll(async () => {
    const stranger = await buildTestApp({ env: env(), redis: new Redis(url, { keyPrefix }) })
    const owner = await buildTestApp({
      env: env(),
      redis: new Redis(url, { keyPrefix }),
      database: stranger.database,
    })
    made = { stranger, owner }
  })
  afterAll(async () => {
    // The owner's app shares the stranger's database, which closing an app closes: the owner's first.
    await made?.owner.app.close().catch(() => {})
    await made?.stranger.close()
    const cleaner = new Redis(url, { keyPrefix })
    const keys = await cleaner.keys(`${keyPrefix}*`)
    if (keys.length > 0) await cleaner.del(...keys.map((key) => key.slice(keyPrefix.length)))
    await cleaner.quit()
  })
  const current = () => {
    if (!made) throw new Error('the instances are made in beforeAll')
    return made
  }
  return {
    get stranger() {
      return current().stranger
    },
    get owner() {
      return current().owner
    },
  }
}

// Every login from an address of its own, so the per-address limits never answer in the back-off's place.
let addresses = 0
const nextAddress = () => {
  addresses += 1
  return `10.${100 + (addresses >> 16)}.${(addresses >> 8) & 255}.${addresses & 255}`
}
const login = (browser: TestClient, body: { email: string; password: string }) =>
  browser.post('/api/login', body, { headers: { 'x-forwarded-for': nextAddress() } })

const deviceCookieLine = (res: ClientResponse) =>
  res.headers.getSetCookie().find((line) => line.startsWith(`${DEVICE_COOKIE}=`))

/** Fortify's lockout answer: the back-off refused the login without checking the password. */
function expectPaused(res: ClientResponse) {
  expect(res.status).toBe(429)
  expect(res.data.errors.email[0]).toMatch(/^Too many login attempts\. Please try again in \d+ seconds\.$/)
}

describe.each([
  ['one instance', oneInstance],
  ...(redisUrl ? [['two instances sharing Redis', () => twoInstancesSharingRedis(redisUrl)] as const] : []),
] as const)('POST /api/login: the back-off spares browsers signed in before (%s)', (_, instances) => {
  const apps = instances()

  /** A stranger rotating addresses, past every per-address limit: 10 wrong passwords pause the email. */
  async function pauseByStranger(email: string) {
    for (let i = 0; i < 10; i++) {
      const res = await login(new TestClient(apps.stranger.baseUrl), { email, password: 'wrong-password' })
      expect(res.status).toBe(422)
    }
    expectPaused(await login(new TestClient(apps.stranger.baseUrl), { email, password: 'wrong-password' }))
  }

  /** A browser where the owner signed in (and out again): it keeps its device cookie. */
  async function knownBrowser(user: UserRow, password: string): Promise<TestClient> {
    const browser = new TestClient(apps.owner.baseUrl)
    expect((await login(browser, { email: user.email, password })).status).toBe(200)
    expect((await browser.post('/api/logout')).status).toBe(204)
    expect(browser.cookies.has(DEVICE_COOKIE)).toBe(true)
    return browser
  }

  it('sets the device cookie at sign-in and registration, as the session cookie (HttpOnly, SameSite=Lax), sealed; not on a failed login; kept at logout', async () => {
    const { user, password } = await createUser(apps.owner.database.db)
    const browser = new TestClient(apps.owner.baseUrl)
    expect(deviceCookieLine(await login(browser, { email: user.email, password: 'wrong-password' }))).toBe(
      undefined,
    )
    const signedIn = await login(browser, { email: user.email, password })
    expect(signedIn.status).toBe(200)
    const line = deviceCookieLine(signedIn)
    expect(line).toMatch(
      new RegExp(
        `^${DEVICE_COOKIE}=v1\\.[\\w.-]+; Max-Age=${DEVICE_LIFETIME_SECONDS}; Path=/; Expires=.+; HttpOnly; SameSite=Lax$`,
      ),
    )
    // Sealed: the value does not show whose it is.
    const value = browser.cookies.get(DEVICE_COOKIE) ?? ''
    expect(value).not.toContain(user.email)

    const out = await browser.post('/api/logout')
    expect(out.status).toBe(204)
    expect(deviceCookieLine(out)).toBe(undefined)
    expect(browser.cookies.get(DEVICE_COOKIE)).toBe(value)

    const registered = await new TestClient(apps.owner.baseUrl).post('/api/register', {
      name: 'New Trader',
      email: `device-${randomBytes(4).toString('hex')}@example.com`,
      password: 'a long enough password',
    })
    expect(registered.status).toBe(201)
    expect(deviceCookieLine(registered)).toMatch(new RegExp(`^${DEVICE_COOKIE}=v1\\.`))
  })

  it("lets the owner's browser that signed in before past a stranger's pause, with the right password only; a new browser still waits", async () => {
    const { user, password } = await createUser(apps.owner.database.db)
    const browser = await knownBrowser(user, password)
    await pauseByStranger(user.email)
    expectPaused(await login(new TestClient(apps.owner.baseUrl), { email: user.email, password }))

    // The password is still checked: a typo is the usual 422, and counts for this browser alone.
    const typo = await login(browser, { email: user.email, password: 'correct horse batery' })
    expect(typo.status).toBe(422)
    expect(typo.data.errors.email).toEqual(['These credentials do not match our records.'])
    const res = await login(browser, { email: user.email.toUpperCase(), password })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ two_factor: false })
    expect((await browser.get('/api/user')).data.email).toBe(user.email)
    // Each sign-in sets a new device cookie.
    expect(deviceCookieLine(res)).toBeDefined()

    // The pause is the stranger's, and stays: a browser without the cookie still waits.
    expectPaused(await login(new TestClient(apps.owner.baseUrl), { email: user.email, password }))
    expectPaused(await login(new TestClient(apps.stranger.baseUrl), { email: user.email, password }))
    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.text).toContain('Browsers you have signed in with before are not paused.')
  })

  it('gives no pass for a forged, altered, foreign-purpose or other user’s device cookie', async () => {
    const { user, password } = await createUser(apps.owner.database.db)
    const genuine = (await knownBrowser(user, password)).cookies.get(DEVICE_COOKIE) ?? ''
    const othersCookie = (await signedInClient(apps.owner)).client.cookies.get(DEVICE_COOKIE) ?? ''
    expect(othersCookie).not.toBe('')
    await pauseByStranger(user.email)

    const [version, iv, tag, body = ''] = genuine.split('.')
    const altered = [version, iv, tag, (body.startsWith('A') ? 'B' : 'A') + body.slice(1)].join('.')
    const expiry = Math.floor(apps.owner.clock.nowMs() / 1000) + 3600
    const plain = `app_device|${user.id}|${randomBytes(16).toString('base64url')}|${expiry}`
    const forged = encryptSecret(plain, `base64:${randomBytes(32).toString('base64')}`)
    const xsrf = new TestClient(apps.owner.baseUrl)
    await xsrf.csrf()
    const foreignPurpose = decodeURIComponent(xsrf.cookies.get('XSRF-TOKEN') ?? '')
    for (const [what, value] of [
      ["another user's", othersCookie],
      ['altered', altered],
      ['sealed under another key', forged],
      ['the XSRF cookie', foreignPurpose],
      ['garbage', 'v1.a.b.c'],
    ] as const) {
      const browser = new TestClient(apps.stranger.baseUrl)
      browser.cookies.set(DEVICE_COOKIE, value)
      expect((await login(browser, { email: user.email, password })).status, what).toBe(429)
    }
    // The genuine one, in any browser, is a pass.
    const owner = new TestClient(apps.stranger.baseUrl)
    owner.cookies.set(DEVICE_COOKIE, genuine)
    expect((await login(owner, { email: user.email, password })).status).toBe(200)
  })

  it('gives no pass for a device cookie past its lifetime', async () => {
    const { user, password } = await createUser(apps.owner.database.db)
    const old = await knownBrowser(user, password)
    apps.owner.clock.advance(DEVICE_LIFETIME_SECONDS * 1000 + 1000)
    // Its session cookies ran out long ago (a browser drops them); the device cookie it keeps.
    old.cookies.delete('app_session')
    old.cookies.delete('XSRF-TOKEN')
    const recent = await knownBrowser(user, password)
    await pauseByStranger(user.email)
    expectPaused(await login(old, { email: user.email, password }))
    expect((await login(recent, { email: user.email, password })).status).toBe(200)
  })

  it(`stops being a pass after ${DEVICE_ATTEMPTS} wrong passwords with it, whoever holds it`, async () => {
    const { user, password } = await createUser(apps.owner.database.db)
    const browser = await knownBrowser(user, password)
    await pauseByStranger(user.email)
    // Someone who copied the cookie guesses from other addresses (and the other instance).
    const thief = new TestClient(apps.stranger.baseUrl)
    thief.cookies.set(DEVICE_COOKIE, browser.cookies.get(DEVICE_COOKIE) ?? '')
    for (let i = 0; i < DEVICE_ATTEMPTS; i++) {
      expect((await login(thief, { email: user.email, password: `guess-${i}` })).status).toBe(422)
    }
    expectPaused(await login(thief, { email: user.email, password }))
    expectPaused(await login(browser, { email: user.email, password }))
  })

  it('ends the pause with a password reset: the owner signs in from a new browser', async () => {
    const { user } = await createUser(apps.owner.database.db)
    await pauseByStranger(user.email)
    const reset = await resetPasswordByMail(apps.owner, sink, user.email, 'a brand new password')
    expect(reset.status).toBe(200)
    const res = await login(new TestClient(apps.owner.baseUrl), {
      email: user.email,
      password: 'a brand new password',
    })
    expect(res.status).toBe(200)
    // The count starts again: 10 more wrong passwords pause it for the first pause's minute, not 5.
    await pauseByStranger(user.email)
    const paused = await login(new TestClient(apps.stranger.baseUrl), { email: user.email, password: 'x' })
    expect(Number(paused.headers.get('retry-after'))).toBeLessThanOrEqual(60)
  })

  it('with two-factor on, knows the browser once the challenge passes, not at the password', async () => {
    const { client, user, password } = await signedInClient(apps.owner)
    await confirmPassword(client, password)
    const enabled = await client.post('/api/user/two-factor-authentication', { password })
    const code = TOTP.generate({
      secret: Secret.fromBase32(enabled.data.secret),
      timestamp: apps.owner.clock.nowMs(),
    })
    expect((await client.post('/api/user/confirmed-two-factor-authentication', { code })).status).toBe(200)
    const [first, second] = enabled.data.recovery_codes as string[]

    const browser = new TestClient(apps.owner.baseUrl)
    const passwordStep = await login(browser, { email: user.email, password })
    expect(passwordStep.data).toEqual({ two_factor: true })
    expect(deviceCookieLine(passwordStep)).toBe(undefined)
    const challenge = await browser.post('/api/two-factor-challenge', { recovery_code: first })
    expect(challenge.status).toBe(200)
    expect(deviceCookieLine(challenge)).toMatch(/; HttpOnly; SameSite=Lax$/)
    // A browser that only got as far as the password has no pass.
    const halfway = new TestClient(apps.owner.baseUrl)
    expect((await login(halfway, { email: user.email, password })).data).toEqual({ two_factor: true })

    await pauseByStranger(user.email)
    expectPaused(await login(halfway, { email: user.email, password }))
    const again = await login(browser, { email: user.email, password })
    expect(again.status).toBe(200)
    expect(again.data).toEqual({ two_factor: true })
    expect((await browser.post('/api/two-factor-challenge', { recovery_code: second })).status).toBe(200)
    expect((await browser.get('/api/user')).data.email).toBe(user.email)
  })
})
