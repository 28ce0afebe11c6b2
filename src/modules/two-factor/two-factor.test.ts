import { createHash } from 'node:crypto'
import { hashSync } from '@node-rs/bcrypt'
import { eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { describe, expect, it } from 'vitest'
import { TEST_APP_KEY } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import {
  confirmPassword,
  createUser,
  signedInClient,
  type UserOverrides,
} from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { passwordResetTokens, type UserRow, users } from '../../db/schema/index.ts'
import { decryptSecret, encryptSecret } from '../../lib/encryption.ts'

const t = appUnderTest()

const STEP_MS = 30_000
const invalidCode = { message: 'The provided two factor authentication code was invalid.' }
const invalidRecoveryCode = { message: 'The provided two factor recovery code was invalid.' }
const RECOVERY_CODE = /^[A-Za-z0-9]{10}-[A-Za-z0-9]{10}$/

/** The code an authenticator app shows now (per the app's clock), or `steps` periods away. */
const totp = (secret: string, steps = 0) =>
  TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: t.clock.nowMs() + steps * STEP_MS })

/** Moves to the next time step: the step just used to confirm or sign in is burned. */
const nextStep = () => t.clock.advance(STEP_MS)

async function row(id: number): Promise<UserRow> {
  const [found] = await t.database.db.select().from(users).where(eq(users.id, id))
  if (!found) throw new Error(`user ${id} is gone`)
  return found
}

/** A signed-in user whose session just confirmed the password, as the app does before the 2FA settings. */
async function confirmedClient(overrides: UserOverrides = {}) {
  const signedIn = await signedInClient(t, overrides)
  await confirmPassword(signedIn.client, signedIn.password)
  return signedIn
}

/** A signed-in user who went through enabling and confirming 2FA, as the app does. */
async function userWithTwoFactor() {
  const signedIn = await confirmedClient()
  const enabled = await signedIn.client.post('/api/user/two-factor-authentication', {
    password: signedIn.password,
  })
  expect(enabled.status).toBe(200)
  const secret: string = enabled.data.secret
  const confirmed = await signedIn.client.post('/api/user/confirmed-two-factor-authentication', {
    code: totp(secret),
  })
  expect(confirmed.status).toBe(200)
  nextStep()
  return { ...signedIn, secret, recoveryCodes: enabled.data.recovery_codes as string[] }
}

/** A fresh browser that typed the right password: its session waits for the second factor. */
async function pendingLogin(user: UserRow, password: string): Promise<TestClient> {
  const client = new TestClient(t.baseUrl)
  const res = await client.post('/api/login', { email: user.email, password })
  expect(res.status).toBe(200)
  expect(res.data).toEqual({ two_factor: true })
  return client
}

describe('POST /api/user/two-factor-authentication', () => {
  it('answers the secret, otpauth URL, QR code and 8 recovery codes; stores the secret encrypted and the codes hashed', async () => {
    const { client, user, password } = await confirmedClient()
    const res = await client.post('/api/user/two-factor-authentication', { password })
    expect(res.status).toBe(200)
    expect(Object.keys(res.data).sort()).toEqual(['otpauth_url', 'qr_svg', 'recovery_codes', 'secret'])
    const { secret, otpauth_url, qr_svg, recovery_codes } = res.data
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    expect(otpauth_url).toBe(
      `otpauth://totp/Trading%20App:${encodeURIComponent(user.email)}?secret=${secret}` +
        '&issuer=Trading%20App&algorithm=SHA1&digits=6&period=30',
    )
    expect(qr_svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="192" height="192"/)
    expect(recovery_codes).toHaveLength(8)
    for (const code of recovery_codes) expect(code).toMatch(RECOVERY_CODE)
    expect(new Set(recovery_codes).size).toBe(8)

    const stored = await row(user.id)
    expect(stored.twoFactorSecret).not.toContain(secret)
    expect(decryptSecret(stored.twoFactorSecret ?? '', TEST_APP_KEY)).toBe(secret)
    for (const code of recovery_codes) expect(stored.twoFactorRecoveryCodes).not.toContain(code)
    expect(stored.twoFactorConfirmedAt).toBeNull()

    // Not on until confirmed: the user object says so, and login does not ask for a code.
    expect((await client.get('/api/user')).data.two_factor_enabled).toBe(false)
    const login = await new TestClient(t.baseUrl).post('/api/login', { email: user.email, password })
    expect(login.data).toEqual({ two_factor: false })
  })

  it('refuses a wrong password sent along with 422 and stores nothing', async () => {
    const { client, user } = await confirmedClient()
    const wrong = await client.post('/api/user/two-factor-authentication', { password: 'not my password' })
    expect(wrong.status).toBe(422)
    expect(wrong.data).toEqual({
      message: 'The password is incorrect.',
      errors: { password: ['The password is incorrect.'] },
    })
    const stored = await row(user.id)
    expect(stored.twoFactorSecret).toBeNull()
    expect(stored.twoFactorRecoveryCodes).toBeNull()
  })

  it('needs no password in the body once the session confirmed it (as Fortify)', async () => {
    const { client, user } = await confirmedClient()
    const res = await client.post('/api/user/two-factor-authentication', {})
    expect(res.status).toBe(200)
    expect(res.data.recovery_codes).toHaveLength(8)
    expect((await row(user.id)).twoFactorSecret).not.toBeNull()
  })

  it('starts an unconfirmed setup over with a new secret, but answers 409 once 2FA is on', async () => {
    const { client, password } = await confirmedClient()
    const first = await client.post('/api/user/two-factor-authentication', { password })
    const second = await client.post('/api/user/two-factor-authentication', { password })
    expect(second.status).toBe(200)
    expect(second.data.secret).not.toBe(first.data.secret)
    // Only the latest secret confirms.
    const stale = await client.post('/api/user/confirmed-two-factor-authentication', {
      code: totp(first.data.secret),
    })
    expect(stale.status).toBe(422)
    const confirmed = await client.post('/api/user/confirmed-two-factor-authentication', {
      code: totp(second.data.secret),
    })
    expect(confirmed.status).toBe(200)

    const again = await client.post('/api/user/two-factor-authentication', { password })
    expect(again.status).toBe(409)
    expect(again.data).toEqual({ message: 'Two factor authentication is already enabled.' })
  })

  it('answers 401 to a guest', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/user/two-factor-authentication', {
      password: 'whatever-it-is',
    })
    expect(res.status).toBe(401)
    expect(res.data).toEqual({ message: 'Unauthenticated.' })
  })
})

describe('POST /api/user/confirmed-two-factor-authentication', () => {
  it('turns 2FA on with a valid code: the user object says so and login asks for the code', async () => {
    const { client, user, password } = await confirmedClient()
    const { data } = await client.post('/api/user/two-factor-authentication', { password })
    const res = await client.post('/api/user/confirmed-two-factor-authentication', {
      code: totp(data.secret),
    })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ two_factor_enabled: true })
    expect((await client.get('/api/user')).data.two_factor_enabled).toBe(true)
    expect((await row(user.id)).twoFactorConfirmedAt).toBeInstanceOf(Date)
    await pendingLogin(user, password)
  })

  it('answers 422 on `code` for a wrong code and without a setup, and 2FA stays off', async () => {
    const expected = {
      message: 'The provided two factor authentication code was invalid.',
      errors: { code: ['The provided two factor authentication code was invalid.'] },
    }
    const { client, user, password } = await confirmedClient()
    const noSetup = await client.post('/api/user/confirmed-two-factor-authentication', { code: '123456' })
    expect(noSetup.status).toBe(422)
    expect(noSetup.data).toEqual(expected)

    const { data } = await client.post('/api/user/two-factor-authentication', { password })
    const wrongCode = String((Number(totp(data.secret)) + 1) % 1_000_000).padStart(6, '0')
    for (const code of [wrongCode, totp(data.secret, 2), 'abcdef', '']) {
      const res = await client.post('/api/user/confirmed-two-factor-authentication', { code })
      expect(res.status).toBe(422)
      if (code !== '') expect(res.data).toEqual(expected)
    }
    expect((await row(user.id)).twoFactorConfirmedAt).toBeNull()
    expect((await client.get('/api/user')).data.two_factor_enabled).toBe(false)
  })
})

describe('POST /api/login with 2FA on', () => {
  it('answers {"two_factor":true} and does not sign in; the session is a new guest one', async () => {
    const { user, password } = await userWithTwoFactor()
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const before = client.cookies.get('app_session')
    const res = await client.post('/api/login', { email: user.email, password })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ two_factor: true })
    expect(client.cookies.get('app_session')).not.toBe(before)
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('still answers a wrong password with the usual 422', async () => {
    const { user } = await userWithTwoFactor()
    const res = await new TestClient(t.baseUrl).post('/api/login', {
      email: user.email,
      password: 'wrong-pass',
    })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ email: ['These credentials do not match our records.'] })
  })

  it('signs out whoever was signed in on that browser', async () => {
    const { user, password } = await userWithTwoFactor()
    const other = await signedInClient(t)
    const res = await other.client.post('/api/login', { email: user.email, password })
    expect(res.data).toEqual({ two_factor: true })
    expect((await other.client.get('/api/user')).status).toBe(401)
  })
})

describe('POST /api/two-factor-challenge', () => {
  it('signs in with a valid code on a new session id and CSRF token: 200 {"two_factor":false}', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    const client = await pendingLogin(user, password)
    const pendingSession = client.cookies.get('app_session')
    const pendingXsrf = client.cookies.get('XSRF-TOKEN')
    const res = await client.post('/api/two-factor-challenge', { code: totp(secret) })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ two_factor: false })
    expect(client.cookies.get('app_session')).not.toBe(pendingSession)
    expect(client.cookies.get('XSRF-TOKEN')).not.toBe(pendingXsrf)
    const me = await client.get('/api/user')
    expect(me.status).toBe(200)
    expect(me.data).toMatchObject({ id: user.id, two_factor_enabled: true })
    // The session that held the pending login is gone.
    const stale = new TestClient(t.baseUrl)
    stale.cookies.set('app_session', pendingSession ?? '')
    expect((await stale.get('/api/user')).status).toBe(401)
  })

  it('answers 401, not 500, when the stored secret cannot be read (an import from the Laravel original)', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    // Laravel's encrypter writes base64 JSON {iv, value, mac, tag}: not this service's format.
    const laravelSealed = Buffer.from(JSON.stringify({ iv: 'x', value: 'y', mac: 'z', tag: '' })).toString(
      'base64',
    )
    await t.database.db.update(users).set({ twoFactorSecret: laravelSealed }).where(eq(users.id, user.id))
    const client = await pendingLogin(user, password)
    const res = await client.post('/api/two-factor-challenge', { code: totp(secret) })
    expect(res.status).toBe(401)
    expect(res.data).toEqual(invalidCode)
  })

  it('accepts the code of the previous time step, not of two steps ago', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    nextStep()
    nextStep()
    const client = await pendingLogin(user, password)
    const tooOld = await client.post('/api/two-factor-challenge', { code: totp(secret, -2) })
    expect(tooOld.status).toBe(401)
    const previous = await client.post('/api/two-factor-challenge', { code: totp(secret, -1) })
    expect(previous.status).toBe(200)
  })

  it('answers 401 for a wrong code, and the browser stays signed out', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    const client = await pendingLogin(user, password)
    const wrong = String((Number(totp(secret)) + 1) % 1_000_000).padStart(6, '0')
    for (const body of [{ code: wrong }, { code: 'abcdef' }, {}, { code: '' }]) {
      const res = await client.post('/api/two-factor-challenge', body)
      expect(res.status).toBe(401)
      expect(res.data).toEqual(invalidCode)
    }
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('answers 401 without a pending login, even with a valid code', async () => {
    const { secret } = await userWithTwoFactor()
    const res = await new TestClient(t.baseUrl).post('/api/two-factor-challenge', { code: totp(secret) })
    expect(res.status).toBe(401)
    expect(res.data).toEqual(invalidCode)
  })

  it('answers 422 in Laravel shape for wrongly typed fields', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/two-factor-challenge', {
      code: { a: 1 },
      recovery_code: 'x'.repeat(300),
    })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({
      code: ['The code field must be a string.'],
      recovery_code: ['The recovery code field must not be greater than 255 characters.'],
    })
  })

  it('never accepts one code twice, not even from two browsers at once', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    const first = await pendingLogin(user, password)
    const code = totp(secret)
    expect((await first.post('/api/two-factor-challenge', { code })).status).toBe(200)
    const replay = await pendingLogin(user, password)
    const res = await replay.post('/api/two-factor-challenge', { code })
    expect(res.status).toBe(401)
    expect(res.data).toEqual(invalidCode)

    nextStep()
    const racers = await Promise.all([1, 2, 3].map(() => pendingLogin(user, password)))
    const fresh = totp(secret)
    const answers = await Promise.all(racers.map((c) => c.post('/api/two-factor-challenge', { code: fresh })))
    expect(answers.map((a) => a.status).sort()).toEqual([200, 401, 401])
  })

  it('lets the pending login expire after 5 minutes', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    const client = await pendingLogin(user, password)
    t.clock.advance(minutes(5) + 1000)
    const res = await client.post('/api/two-factor-challenge', { code: totp(secret) })
    expect(res.status).toBe(401)
    expect(res.data).toEqual(invalidCode)
    expect((await client.get('/api/user')).status).toBe(401)
    // Typing the password again starts a new one.
    const again = await pendingLogin(user, password)
    expect((await again.post('/api/two-factor-challenge', { code: totp(secret) })).status).toBe(200)
  })

  // Someone with the old password waits at the code prompt while the owner changes it: their
  // pending login dies with the old password (here with a right code, as if they had the device too).
  it.each([
    ['updated on the profile', 'profile'],
    ['reset with a mailed token', 'reset'],
  ] as const)('ends a pending login when the password is %s meanwhile', async (_, how) => {
    const { client: owner, user, password, secret } = await userWithTwoFactor()
    const intruder = await pendingLogin(user, password)
    const newPassword = 'a brand new secret'
    if (how === 'profile') {
      const res = await owner.put('/api/user-profile/password', {
        current_password: password,
        password: newPassword,
        password_confirmation: newPassword,
      })
      expect(res.status).toBe(200)
    } else {
      const token = 'a'.repeat(64)
      await t.database.db.insert(passwordResetTokens).values({
        email: user.email,
        token: createHash('sha256').update(token).digest('hex'),
        createdAt: t.clock.now(),
      })
      const res = await new TestClient(t.baseUrl).post('/api/password/reset', {
        token,
        email: user.email,
        password: newPassword,
      })
      expect(res.status).toBe(200)
    }
    const res = await intruder.post('/api/two-factor-challenge', { code: totp(secret) })
    expect(res.status).toBe(401)
    expect(res.data).toEqual(invalidCode)
    expect((await intruder.get('/api/user')).status).toBe(401)
    // The owner, with the new password, gets through with the same code's successor.
    nextStep()
    const again = await pendingLogin(user, newPassword)
    expect((await again.post('/api/two-factor-challenge', { code: totp(secret) })).status).toBe(200)
  })

  it('a dead pending login counts no wrong codes towards the lockout', async () => {
    const { client: owner, user, password, secret } = await userWithTwoFactor()
    const intruder = await pendingLogin(user, password)
    const newPassword = 'a brand new secret'
    const changed = await owner.put('/api/user-profile/password', {
      current_password: password,
      password: newPassword,
      password_confirmation: newPassword,
    })
    expect(changed.status).toBe(200)
    const wrong = String((Number(totp(secret)) + 1) % 1_000_000).padStart(6, '0')
    // Ten wrong codes (five a minute, the throttle's pace) of a live login would lock the account for
    // 5 minutes (429, and a mail to the owner); these were nobody's.
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 5; i++) {
        expect((await intruder.post('/api/two-factor-challenge', { code: wrong })).status).toBe(401)
      }
      t.clock.advance(61_000)
    }
    const owners = await pendingLogin(user, newPassword)
    expect((await owners.post('/api/two-factor-challenge', { code: totp(secret) })).status).toBe(200)
  })

  it("a dead pending login does not use up the owner's attempts of the minute", async () => {
    const { client: owner, user, password, secret } = await userWithTwoFactor()
    const intruder = await pendingLogin(user, password)
    const newPassword = 'a brand new secret'
    const changed = await owner.put('/api/user-profile/password', {
      current_password: password,
      password: newPassword,
      password_confirmation: newPassword,
    })
    expect(changed.status).toBe(200)
    const wrong = String((Number(totp(secret)) + 1) % 1_000_000).padStart(6, '0')
    for (let i = 0; i < 5; i++) {
      expect((await intruder.post('/api/two-factor-challenge', { code: wrong })).status).toBe(401)
    }
    const owners = await pendingLogin(user, newPassword)
    expect((await owners.post('/api/two-factor-challenge', { code: totp(secret) })).status).toBe(200)
  })

  it('keeps the pending login of an account imported with a bcrypt hash, rehashed by that very login', async () => {
    const { user, secret } = await userWithTwoFactor()
    const laravelHash = hashSync('from-laravel-1', { cost: 4 }).replace(/^\$2b\$/, '$2y$')
    await t.database.db.update(users).set({ password: laravelHash }).where(eq(users.id, user.id))
    const client = await pendingLogin(user, 'from-laravel-1')
    expect((await row(user.id)).password).toMatch(/^\$argon2id\$/)
    expect((await client.post('/api/two-factor-challenge', { code: totp(secret) })).status).toBe(200)
    expect((await client.get('/api/user')).data.id).toBe(user.id)
  })

  it('allows 5 attempts a minute per pending login, then answers 429 even to a right code', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    const client = await pendingLogin(user, password)
    const wrong = String((Number(totp(secret)) + 1) % 1_000_000).padStart(6, '0')
    for (let i = 0; i < 5; i++) {
      const res = await client.post('/api/two-factor-challenge', { code: wrong })
      expect(res.status).toBe(401)
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(4 - i))
    }
    // A second browser with the same account's pending login shares the limit.
    const second = await pendingLogin(user, password)
    const blocked = await second.post('/api/two-factor-challenge', { code: totp(secret) })
    expect(blocked.status).toBe(429)
    expect(blocked.data).toEqual({ message: 'Too Many Attempts.' })
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await second.get('/api/user')).status).toBe(401)

    t.clock.advance(61_000)
    expect((await second.post('/api/two-factor-challenge', { code: totp(secret) })).status).toBe(200)
  })

  it('signs in with a recovery code once; the code is then gone', async () => {
    const { client: owner, user, password, recoveryCodes } = await userWithTwoFactor()
    const [used, ...rest] = recoveryCodes as [string, ...string[]]
    const client = await pendingLogin(user, password)
    const res = await client.post('/api/two-factor-challenge', { recovery_code: used })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ two_factor: false })
    expect((await client.get('/api/user')).data.id).toBe(user.id)

    const again = await pendingLogin(user, password)
    const reused = await again.post('/api/two-factor-challenge', { recovery_code: used })
    expect(reused.status).toBe(401)
    expect(reused.data).toEqual(invalidRecoveryCode)
    expect((await owner.get('/api/user/two-factor-recovery-codes')).data).toEqual(rest)
  })

  it('answers 401 for a wrong recovery code, but a valid code sent with it still signs in (as Fortify)', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    const client = await pendingLogin(user, password)
    const wrong = await client.post('/api/two-factor-challenge', { recovery_code: 'AAAAAAAAAA-BBBBBBBBBB' })
    expect(wrong.status).toBe(401)
    expect(wrong.data).toEqual(invalidRecoveryCode)
    const both = await client.post('/api/two-factor-challenge', {
      recovery_code: 'AAAAAAAAAA-BBBBBBBBBB',
      code: totp(secret),
    })
    expect(both.status).toBe(200)
  })
})

describe('GET and POST /api/user/two-factor-recovery-codes', () => {
  it('GET answers the unused codes in clear, and [] without 2FA', async () => {
    const { client, recoveryCodes } = await userWithTwoFactor()
    const res = await client.get('/api/user/two-factor-recovery-codes')
    expect(res.status).toBe(200)
    expect(res.data).toEqual(recoveryCodes)
    const { client: plain } = await confirmedClient()
    expect((await plain.get('/api/user/two-factor-recovery-codes')).data).toEqual([])
  })

  it('POST replaces all 8 codes: the new ones are answered and work, the old ones stop working', async () => {
    const { client, user, password, recoveryCodes } = await userWithTwoFactor()
    const res = await client.post('/api/user/two-factor-recovery-codes')
    expect(res.status).toBe(200)
    expect(res.data).toHaveLength(8)
    for (const code of res.data) expect(code).toMatch(RECOVERY_CODE)
    expect(res.data.filter((c: string) => recoveryCodes.includes(c))).toEqual([])
    expect((await client.get('/api/user/two-factor-recovery-codes')).data).toEqual(res.data)

    const old = await pendingLogin(user, password)
    expect((await old.post('/api/two-factor-challenge', { recovery_code: recoveryCodes[0] })).status).toBe(
      401,
    )
    expect((await old.post('/api/two-factor-challenge', { recovery_code: res.data[0] })).status).toBe(200)
  })

  it('POST answers 409 when 2FA was never set up, and stores nothing', async () => {
    const { client, user } = await confirmedClient()
    const res = await client.post('/api/user/two-factor-recovery-codes')
    expect(res.status).toBe(409)
    expect(res.data).toEqual({ message: 'Two factor authentication has not been enabled.' })
    expect((await row(user.id)).twoFactorRecoveryCodes).toBeNull()
  })
})

describe('2FA data this APP_KEY cannot read', () => {
  // Laravel's encrypter writes base64 JSON {iv, value, mac, tag}: what an import of the original holds.
  const laravelSealed = (plain: string) =>
    Buffer.from(
      JSON.stringify({ iv: 'aXY=', value: Buffer.from(plain).toString('base64'), mac: 'm', tag: '' }),
    ).toString('base64')
  const OTHER_APP_KEY = `base64:${Buffer.alloc(32, 7).toString('base64')}`

  /** The user's codes as this service stores them, but sealed under another (rotated) APP_KEY. */
  const sealedUnderOtherKey = (codes: string[]) =>
    JSON.stringify({
      hashes: codes.map((code) => createHash('sha256').update(code).digest('hex')),
      sealed: encryptSecret(JSON.stringify(codes), OTHER_APP_KEY),
    })

  const setCodes = (id: number, stored: string) =>
    t.database.db.update(users).set({ twoFactorRecoveryCodes: stored }).where(eq(users.id, id))

  it("reads as no codes: GET answers [], not 500, for the Laravel original's codes", async () => {
    const { client, user, recoveryCodes } = await userWithTwoFactor()
    await setCodes(user.id, laravelSealed(JSON.stringify(recoveryCodes)))
    const res = await client.get('/api/user/two-factor-recovery-codes')
    expect(res.status).toBe(200)
    expect(res.data).toEqual([])
  })

  it('reads as no codes after an APP_KEY rotation: GET answers [], a code signs nobody in (401, not 500)', async () => {
    const { client, user, password, recoveryCodes } = await userWithTwoFactor()
    await setCodes(user.id, sealedUnderOtherKey(recoveryCodes))
    expect((await client.get('/api/user/two-factor-recovery-codes')).data).toEqual([])
    const login = await pendingLogin(user, password)
    const res = await login.post('/api/two-factor-challenge', { recovery_code: recoveryCodes[0] })
    expect(res.status).toBe(401)
    expect(res.data).toEqual(invalidRecoveryCode)
  })

  it('a recovery code against unreadable or malformed codes is a 401, never a 500', async () => {
    const { user, password, recoveryCodes } = await userWithTwoFactor()
    // Four, under the lockout that five wrong codes bring.
    for (const stored of [laravelSealed('[]'), '{"hashes":"x","sealed":1}', 'null', '[']) {
      await setCodes(user.id, stored)
      const login = await pendingLogin(user, password)
      const res = await login.post('/api/two-factor-challenge', { recovery_code: recoveryCodes[1] })
      expect(res.status, stored).toBe(401)
    }
  })

  it('regenerating replaces unreadable codes with 8 that work', async () => {
    const { client, user, password } = await userWithTwoFactor()
    await setCodes(user.id, laravelSealed('[]'))
    const res = await client.post('/api/user/two-factor-recovery-codes')
    expect(res.status).toBe(200)
    expect((await client.get('/api/user/two-factor-recovery-codes')).data).toEqual(res.data)
    const login = await pendingLogin(user, password)
    expect((await login.post('/api/two-factor-challenge', { recovery_code: res.data[0] })).status).toBe(200)
  })
})

describe('DELETE /api/user/two-factor-authentication', () => {
  it('needs the password: a wrong one is a 422 and 2FA stays on', async () => {
    const { client, user } = await userWithTwoFactor()
    const res = await client.delete('/api/user/two-factor-authentication', { password: 'not-the-password' })
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The password is incorrect.',
      errors: { password: ['The password is incorrect.'] },
    })
    const stored = await row(user.id)
    expect(stored.twoFactorSecret).not.toBeNull()
    expect(stored.twoFactorConfirmedAt).not.toBeNull()
  })

  it('turns 2FA off: secret, codes and confirmation are cleared and login no longer asks', async () => {
    const { client, user, password } = await userWithTwoFactor()
    const res = await client.delete('/api/user/two-factor-authentication', { password })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ two_factor_enabled: false })
    const stored = await row(user.id)
    expect(stored.twoFactorSecret).toBeNull()
    expect(stored.twoFactorRecoveryCodes).toBeNull()
    expect(stored.twoFactorConfirmedAt).toBeNull()
    expect((await client.get('/api/user')).data.two_factor_enabled).toBe(false)
    expect((await client.get('/api/user/two-factor-recovery-codes')).data).toEqual([])
    const login = await new TestClient(t.baseUrl).post('/api/login', { email: user.email, password })
    expect(login.data).toEqual({ two_factor: false })
  })
})

describe("another user's two-factor authentication", () => {
  it('can never be read or changed through these routes', async () => {
    const owner = await userWithTwoFactor()
    const before = await row(owner.user.id)
    const { client: intruder, password: intruderPassword } = await confirmedClient({
      password: 'the intruder password',
    })

    // Reads answer the caller's own (empty) state, whatever is sent.
    expect((await intruder.get('/api/user/two-factor-recovery-codes')).data).toEqual([])
    expect((await intruder.get(`/api/user/two-factor-recovery-codes?user_id=${owner.user.id}`)).data).toEqual(
      [],
    )
    // The owner's password or code do not work on the intruder's account, nor reach the owner's.
    const enable = await intruder.post('/api/user/two-factor-authentication', { password: owner.password })
    expect(enable.status).toBe(422)
    const confirm = await intruder.post('/api/user/confirmed-two-factor-authentication', {
      code: totp(owner.secret),
      user_id: owner.user.id,
    })
    expect(confirm.status).toBe(422)
    expect(
      (await intruder.post('/api/user/two-factor-recovery-codes', { user_id: owner.user.id })).status,
    ).toBe(409)
    const disable = await intruder.delete('/api/user/two-factor-authentication', {
      password: intruderPassword,
      user_id: owner.user.id,
    })
    expect(disable.status).toBe(200)

    const after = await row(owner.user.id)
    expect(after.twoFactorSecret).toBe(before.twoFactorSecret)
    expect(after.twoFactorRecoveryCodes).toBe(before.twoFactorRecoveryCodes)
    expect(after.twoFactorConfirmedAt).toEqual(before.twoFactorConfirmedAt)
    expect((await owner.client.get('/api/user/two-factor-recovery-codes')).data).toEqual(owner.recoveryCodes)
  })

  it("cannot sign in with another user's codes, nor from a session without that user's pending login", async () => {
    const owner = await userWithTwoFactor()
    const other = await userWithTwoFactor()
    // The other user's pending login does not accept the owner's code or recovery code.
    const otherLogin = await pendingLogin(other.user, other.password)
    expect((await otherLogin.post('/api/two-factor-challenge', { code: totp(owner.secret) })).status).toBe(
      401,
    )
    const foreign = await otherLogin.post('/api/two-factor-challenge', {
      recovery_code: owner.recoveryCodes[0],
    })
    expect(foreign.status).toBe(401)
    expect((await otherLogin.get('/api/user')).status).toBe(401)
    // The owner's code works only in the browser that typed the owner's password.
    const { client: stranger } = await signedInClient(t)
    expect((await stranger.post('/api/two-factor-challenge', { code: totp(owner.secret) })).status).toBe(401)
    expect((await stranger.get('/api/user')).data.id).not.toBe(owner.user.id)
    // Nothing was consumed: the owner's recovery code still signs the owner in.
    const ownerLogin = await pendingLogin(owner.user, owner.password)
    const ok = await ownerLogin.post('/api/two-factor-challenge', { recovery_code: owner.recoveryCodes[0] })
    expect(ok.status).toBe(200)
    expect((await ownerLogin.get('/api/user')).data.id).toBe(owner.user.id)
  })

  it('the secret and codes never appear in the user object', async () => {
    const owner = await userWithTwoFactor()
    const me = await owner.client.get('/api/user')
    expect(me.text).not.toContain(owner.secret)
    for (const code of owner.recoveryCodes) expect(me.text).not.toContain(code)
    expect(me.text).not.toMatch(/secret|recovery/i)
  })
})

describe('a user created without 2FA', () => {
  it('signs in straight away with {"two_factor":false}', async () => {
    const { user, password } = await createUser(t.database.db)
    const client = new TestClient(t.baseUrl)
    const res = await client.post('/api/login', { email: user.email, password })
    expect(res.data).toEqual({ two_factor: false })
    expect((await client.get('/api/user')).status).toBe(200)
  })
})
