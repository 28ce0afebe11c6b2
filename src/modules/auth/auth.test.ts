import { hashSync } from '@node-rs/bcrypt'
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { createUser, signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { users } from '../../db/schema/index.ts'

const t = appUnderTest()

const userKeys = [
  'available_credits',
  'country',
  'created_at',
  'credits_available_for_automation',
  'email',
  'email_verified_at',
  'held_credits',
  'id',
  'is_admin',
  'name',
  'phone',
  'profile_photo_url',
  'timezone',
  'two_factor_enabled',
  'updated_at',
]
const laravelDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

function setCookie(res: { headers: Headers }, name: string): string | undefined {
  return res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`))
}

describe('GET /guard/csrf-cookie', () => {
  it('answers 204 with an XSRF-TOKEN cookie JavaScript can read and an HttpOnly session cookie', async () => {
    const client = new TestClient(t.baseUrl)
    const res = await client.get('/guard/csrf-cookie')
    expect(res.status).toBe(204)
    expect(res.text).toBe('')
    const xsrf = setCookie(res, 'XSRF-TOKEN')
    const session = setCookie(res, 'app_session')
    expect(xsrf).toMatch(/; Max-Age=7200; Path=\/; Expires=.+; SameSite=Lax$/)
    expect(xsrf).not.toContain('HttpOnly')
    expect(session).toMatch(/; Max-Age=7200; Path=\/; Expires=.+; HttpOnly; SameSite=Lax$/)
    expect(session).not.toContain('Secure')
  })

  it('keeps the session and its token when called again', async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const first = { session: client.cookies.get('app_session'), xsrf: client.cookies.get('XSRF-TOKEN') }
    await client.csrf()
    expect(client.cookies.get('app_session')).toBe(first.session)
    expect(client.cookies.get('XSRF-TOKEN')).toBe(first.xsrf)
  })

  it('marks cookies Secure when SESSION_SECURE_COOKIE=true', async () => {
    const secure = await buildTestApp({ env: { SESSION_SECURE_COOKIE: 'true' } })
    try {
      const res = await new TestClient(secure.baseUrl).get('/guard/csrf-cookie')
      expect(setCookie(res, 'app_session')).toContain('; Secure')
      expect(setCookie(res, 'XSRF-TOKEN')).toContain('; Secure')
    } finally {
      await secure.close()
    }
  })
})

describe('POST /api/register', () => {
  it('creates the user, answers 201 with the user object, and signs the session in', async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const guestSession = client.cookies.get('app_session')
    const email = uniqueEmail('Ada')
    const res = await client.post('/api/register', {
      name: 'Ada Lovelace',
      email,
      password: 'analytical-engine',
    })
    expect(res.status).toBe(201)
    expect(Object.keys(res.data).sort()).toEqual(userKeys)
    expect(res.data).toMatchObject({
      name: 'Ada Lovelace',
      email: email.toLowerCase(),
      email_verified_at: null,
      is_admin: false,
      two_factor_enabled: false,
      available_credits: 0,
      held_credits: 0,
      credits_available_for_automation: 0,
    })
    expect(res.data.created_at).toMatch(laravelDate)
    // A new session id on sign-in: a planted guest cookie cannot be ridden into the account.
    expect(client.cookies.get('app_session')).not.toBe(guestSession)
    const me = await client.get('/api/user')
    expect(me.status).toBe(200)
    expect(me.data.id).toBe(res.data.id)
  })

  it('accepts a matching password_confirmation and rejects a different one', async () => {
    const client = new TestClient(t.baseUrl)
    const bad = await client.post('/api/register', {
      name: 'B',
      email: uniqueEmail(),
      password: 'password-one',
      password_confirmation: 'password-two',
    })
    expect(bad.status).toBe(422)
    expect(bad.data).toEqual({
      message: 'The password field confirmation does not match.',
      errors: { password: ['The password field confirmation does not match.'] },
    })
    const good = await client.post('/api/register', {
      name: 'B',
      email: uniqueEmail(),
      password: 'password-one',
      password_confirmation: 'password-one',
    })
    expect(good.status).toBe(201)
  })

  it('answers 422 in Laravel shape for every missing field', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/register', {})
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The name field is required. (and 2 more errors)',
      errors: {
        name: ['The name field is required.'],
        email: ['The email field is required.'],
        password: ['The password field is required.'],
      },
    })
  })

  it('rejects a malformed email, a short password, and too-long or wrongly typed values', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/register', {
      name: 'x'.repeat(256),
      email: 'not-an-email',
      password: 'short',
    })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({
      name: ['The name field must not be greater than 255 characters.'],
      email: ['The email field must be a valid email address.'],
      password: ['The password field must be at least 8 characters.'],
    })
    const typed = await new TestClient(t.baseUrl).post('/api/register', {
      name: { a: 1 },
      email: ['a@b.co', 'c@d.co'],
      password: null,
    })
    expect(typed.status).toBe(422)
    expect(typed.data.errors).toEqual({
      name: ['The name field must be a string.'],
      email: ['The email field must be a string.'],
      // JSON null reads as empty, as Laravel's ConvertEmptyStringsToNull makes "" and null one thing.
      password: ['The password field is required.'],
    })
  })

  it('trims input as Laravel does: a blank name is missing, spaces around an email are dropped', async () => {
    const email = uniqueEmail('trim')
    const blank = await new TestClient(t.baseUrl).post('/api/register', {
      name: '   ',
      email: `  ${email}  `,
      password: ' spaced password ',
    })
    expect(blank.status).toBe(422)
    expect(blank.data.errors).toEqual({ name: ['The name field is required.'] })
    const client = new TestClient(t.baseUrl)
    const created = await client.post('/api/register', {
      name: '  Ada  ',
      email: `  ${email}  `,
      password: ' spaced password ',
    })
    expect(created.status).toBe(201)
    expect(created.data).toMatchObject({ name: 'Ada', email })
    // Passwords are kept as typed, spaces included.
    await client.post('/api/logout')
    expect((await client.post('/api/login', { email, password: 'spaced password' })).status).toBe(422)
    expect((await client.post('/api/login', { email, password: ' spaced password ' })).status).toBe(200)
  })

  it('treats emails as unique whatever their case, and stores nothing on failure', async () => {
    const email = uniqueEmail('case')
    const client = new TestClient(t.baseUrl)
    expect((await client.post('/api/register', { name: 'One', email, password: 'password-1' })).status).toBe(
      201,
    )
    const again = await new TestClient(t.baseUrl).post('/api/register', {
      name: 'Two',
      email: email.toUpperCase(),
      password: 'password-2',
    })
    expect(again.status).toBe(422)
    expect(again.data).toEqual({
      message: 'The email has already been taken.',
      errors: { email: ['The email has already been taken.'] },
    })
    const rows = await t.database.db.select().from(users).where(eq(users.email, email.toLowerCase()))
    expect(rows.map((r) => r.name)).toEqual(['One'])
  })

  it('lets exactly one of two simultaneous registrations of one email through', async () => {
    const email = uniqueEmail('race')
    const answers = await Promise.all(
      [1, 2, 3].map(() =>
        new TestClient(t.baseUrl).post('/api/register', { name: 'Racer', email, password: 'password-1' }),
      ),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([201, 422, 422])
  })

  it('never answers the password hash or two-factor secrets', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/register', {
      name: 'Quiet',
      email: uniqueEmail(),
      password: 'password-quiet',
    })
    expect(res.text).not.toMatch(/argon2|password|secret|recovery/i)
  })
})

describe('POST /api/login', () => {
  it('signs in with the right password: 200 {"two_factor":false} on a new session id', async () => {
    const { user, password } = await createUser(t.database.db)
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const guest = client.cookies.get('app_session')
    const guestXsrf = client.cookies.get('XSRF-TOKEN')
    const res = await client.post('/api/login', { email: user.email.toUpperCase(), password })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ two_factor: false })
    expect(client.cookies.get('app_session')).not.toBe(guest)
    expect(client.cookies.get('XSRF-TOKEN')).not.toBe(guestXsrf)
    expect((await client.get('/api/user')).data.email).toBe(user.email)
    // The guest session it replaced is gone.
    const stale = new TestClient(t.baseUrl)
    stale.cookies.set('app_session', guest ?? '')
    expect((await stale.get('/api/user')).status).toBe(401)
  })

  it('answers the same 422 for a wrong password and for an unknown email', async () => {
    const { user } = await createUser(t.database.db)
    const expected = {
      message: 'These credentials do not match our records.',
      errors: { email: ['These credentials do not match our records.'] },
    }
    const wrong = await new TestClient(t.baseUrl).post('/api/login', {
      email: user.email,
      password: 'nope-nope',
    })
    const unknown = await new TestClient(t.baseUrl).post('/api/login', {
      email: uniqueEmail('ghost'),
      password: 'nope-nope',
    })
    expect(wrong.status).toBe(422)
    expect(wrong.data).toEqual(expected)
    expect(unknown.status).toBe(422)
    expect(unknown.data).toEqual(expected)
  })

  it('answers 422 for missing fields', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/login', { email: '' })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({
      email: ['The email field is required.'],
      password: ['The password field is required.'],
    })
  })

  it('keeps a blocked user out', async () => {
    const { user, password } = await createUser(t.database.db, { blocked: true })
    const client = new TestClient(t.baseUrl)
    const res = await client.post('/api/login', { email: user.email, password })
    expect(res.status).toBe(422)
    expect(res.data.errors.email).toEqual(['This account has been blocked. Please contact support.'])
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('ends the session of a user blocked while signed in', async () => {
    const { client, user } = await signedInClient(t)
    await t.database.db.update(users).set({ blockedAt: new Date() }).where(eq(users.id, user.id))
    expect((await client.get('/api/user')).status).toBe(401)
  })

  it('accepts a Laravel bcrypt ($2y$) hash and rehashes it to argon2id', async () => {
    const { user } = await createUser(t.database.db)
    const laravelHash = hashSync('from-laravel-1', { cost: 10 }).replace(/^\$2b\$/, '$2y$')
    await t.database.db.update(users).set({ password: laravelHash }).where(eq(users.id, user.id))
    const res = await new TestClient(t.baseUrl).post('/api/login', {
      email: user.email,
      password: 'from-laravel-1',
    })
    expect(res.status).toBe(200)
    const [row] = await t.database.db.select().from(users).where(eq(users.id, user.id))
    expect(row?.password).toMatch(/^\$argon2id\$/)
    // The new hash still takes the same password.
    const again = await new TestClient(t.baseUrl).post('/api/login', {
      email: user.email,
      password: 'from-laravel-1',
    })
    expect(again.status).toBe(200)
  })

  it('is throttled to 5 attempts a minute per email and IP, with Laravel headers', async () => {
    const { user, password } = await createUser(t.database.db)
    const client = new TestClient(t.baseUrl)
    for (let i = 1; i <= 5; i++) {
      const res = await client.post('/api/login', { email: user.email, password: 'wrong-password' })
      expect(res.status).toBe(422)
      expect(res.headers.get('x-ratelimit-limit')).toBe('5')
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(5 - i))
    }
    const blocked = await client.post('/api/login', { email: user.email, password })
    expect(blocked.status).toBe(429)
    expect(blocked.data).toEqual({ message: 'Too Many Attempts.' })
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(Number(blocked.headers.get('retry-after'))).toBeLessThanOrEqual(60)
    expect(blocked.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(Number(blocked.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000 - 5)
    // The same email in another case is the same key; another email is not.
    const otherCase = await client.post('/api/login', { email: user.email.toUpperCase(), password })
    expect(otherCase.status).toBe(429)
    const { user: other, password: otherPassword } = await createUser(t.database.db)
    expect((await client.post('/api/login', { email: other.email, password: otherPassword })).status).toBe(
      200,
    )
    // A minute later the window is over.
    t.clock.advance(61_000)
    expect((await client.post('/api/login', { email: user.email, password })).status).toBe(200)
  })
})

describe('POST /api/logout', () => {
  it('answers 204, ends the session, and hands out a fresh guest session for the next sign-in', async () => {
    const { client, user, password } = await signedInClient(t)
    const signedInCookie = client.cookies.get('app_session')
    const res = await client.post('/api/logout')
    expect(res.status).toBe(204)
    expect((await client.get('/api/user')).status).toBe(401)
    const replay = new TestClient(t.baseUrl)
    replay.cookies.set('app_session', signedInCookie ?? '')
    expect((await replay.get('/api/user')).status).toBe(401)
    // The new XSRF cookie is enough to sign in again without another csrf-cookie call.
    expect(client.cookies.get('XSRF-TOKEN')).toBeDefined()
    const again = await client.post('/api/login', { email: user.email, password })
    expect(again.status).toBe(200)
  })

  it('answers 401 to a guest', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/logout')
    expect(res.status).toBe(401)
    expect(res.data).toEqual({ message: 'Unauthenticated.' })
  })
})

describe('GET /api/user', () => {
  it('answers 401 {"message":"Unauthenticated."} without a session, or with a forged cookie', async () => {
    const res = await new TestClient(t.baseUrl).get('/api/user')
    expect(res.status).toBe(401)
    expect(res.data).toEqual({ message: 'Unauthenticated.' })
    const forged = new TestClient(t.baseUrl)
    forged.cookies.set('app_session', 'x'.repeat(40))
    expect((await forged.get('/api/user')).status).toBe(401)
  })

  it('answers the signed-in user, and only that user', async () => {
    const a = await signedInClient(t, { name: 'Alice' })
    const b = await signedInClient(t, { name: 'Bob', isAdmin: true, verified: true })
    const resA = await a.client.get('/api/user')
    const resB = await b.client.get('/api/user')
    expect(resA.data).toMatchObject({
      id: a.user.id,
      name: 'Alice',
      is_admin: false,
      email_verified_at: null,
    })
    expect(resB.data).toMatchObject({ id: b.user.id, name: 'Bob', is_admin: true })
    expect(resB.data.email_verified_at).toMatch(laravelDate)
  })
})

describe('session lifetime', () => {
  it('expires after SESSION_LIFETIME minutes idle, and clears the cookie', async () => {
    const { client } = await signedInClient(t)
    t.clock.advance(minutes(121))
    const res = await client.get('/api/user')
    expect(res.status).toBe(401)
    expect(setCookie(res, 'app_session')).toMatch(/Expires=Thu, 01 Jan 1970/)
  })

  it('slides: activity keeps a session alive past one lifetime', async () => {
    const { client } = await signedInClient(t)
    t.clock.advance(minutes(100))
    expect((await client.get('/api/user')).status).toBe(200)
    t.clock.advance(minutes(100))
    expect((await client.get('/api/user')).status).toBe(200)
  })
})
