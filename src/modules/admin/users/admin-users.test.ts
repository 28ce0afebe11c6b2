import { eq } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { TestClient } from '../../../../test/helpers/client.ts'
import {
  confirmPassword,
  createUser,
  signedInClient,
  uniqueEmail,
} from '../../../../test/helpers/factories.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../../test/helpers/under-test.ts'
import { users } from '../../../db/schema/index.ts'

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))
let admin: TestClient
beforeAll(async () => {
  const signedIn = await signedInClient(t, { isAdmin: true, verified: true })
  // Email, password and role changes (and creating an admin) need a recent password confirmation.
  await confirmPassword(signedIn.client, signedIn.password)
  admin = signedIn.client
})

const userRow = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]
const unauthorized = { message: 'This action is unauthorized.' }
const notFound = (id: number) => ({ message: `No query results for model [App\\Models\\User] ${id}` })

describe('the admin guard', () => {
  // Every admin route, with a body valid for it, so only the guard can refuse.
  const routes = (id: number): [string, string, unknown][] => [
    ['GET', '/api/users', undefined],
    ['POST', '/api/users', { name: 'Nobody', email: uniqueEmail('guard'), password: 'long enough secret' }],
    ['GET', `/api/users/${id}`, undefined],
    ['PUT', `/api/users/${id}`, { name: 'Renamed', email: uniqueEmail('guard') }],
    ['DELETE', `/api/users/${id}`, undefined],
    ['POST', `/api/user/block-unblock/${id}`, undefined],
    ['POST', `/api/user/change-role/${id}`, { role: 'admin' }],
  ]

  it('answers 401 to a guest and 403 to a signed-in user who is not an admin, changing nothing', async () => {
    const { user: target } = await createUser(t.database.db, { name: 'Target' })
    const guest = new TestClient(t.baseUrl)
    const { client: member } = await signedInClient(t, { verified: true })
    for (const [method, path, body] of routes(target.id)) {
      const asGuest = await guest.request(method, path, body)
      expect({ route: `${method} ${path}`, status: asGuest.status, data: asGuest.data }).toEqual({
        route: `${method} ${path}`,
        status: 401,
        data: { message: 'Unauthenticated.' },
      })
      const asMember = await member.request(method, path, body)
      expect({ route: `${method} ${path}`, status: asMember.status, data: asMember.data }).toEqual({
        route: `${method} ${path}`,
        status: 403,
        data: unauthorized,
      })
    }
    expect(await userRow(target.id)).toEqual(target)
  })

  it('lets an admin through on every route', async () => {
    const { user: target } = await createUser(t.database.db)
    const statuses = []
    for (const [method, path, body] of routes(target.id)) {
      statuses.push(`${method} ${path} ${(await admin.request(method, path, body)).status}`)
    }
    expect(statuses).toEqual([
      'GET /api/users 200',
      'POST /api/users 201',
      `GET /api/users/${target.id} 200`,
      `PUT /api/users/${target.id} 200`,
      `DELETE /api/users/${target.id} 200`,
      // Deleted by the route before: the last two find nobody.
      `POST /api/user/block-unblock/${target.id} 404`,
      `POST /api/user/change-role/${target.id} 404`,
    ])
  })
})

describe('GET /api/users', () => {
  it('answers Laravel paginator JSON of admin views, newest first, 15 a page by default', async () => {
    for (let i = 0; i < 16; i++) {
      await createUser(t.database.db, { name: `Pager ${i}` })
      t.clock.advance(1)
    }
    const res = await admin.get('/api/users')
    expect(res.status).toBe(200)
    expect(Object.keys(res.data)).toEqual([
      'current_page',
      'data',
      'first_page_url',
      'from',
      'last_page',
      'last_page_url',
      'links',
      'next_page_url',
      'path',
      'per_page',
      'prev_page_url',
      'to',
      'total',
    ])
    expect(res.data).toMatchObject({
      current_page: 1,
      per_page: 15,
      from: 1,
      to: 15,
      path: `${t.config.appUrl}/api/users`,
      first_page_url: `${t.config.appUrl}/api/users?page=1`,
      next_page_url: `${t.config.appUrl}/api/users?page=2`,
      prev_page_url: null,
    })
    expect(res.data.total).toBeGreaterThanOrEqual(17)
    expect(res.data.data).toHaveLength(15)
    const created = res.data.data.map((u: { created_at: string }) => u.created_at)
    expect(created).toEqual([...created].sort().reverse())
    expect(res.data.links[0]).toEqual({ url: null, label: '&laquo; Previous', page: null, active: false })
  })

  it('presents each user with the block state and without any secret', async () => {
    const { user } = await createUser(t.database.db, { name: 'Shown Person', blocked: true, verified: true })
    const res = await admin.get(`/api/users?q=${encodeURIComponent(user.email)}`)
    expect(res.data.data).toEqual([
      {
        id: user.id,
        name: 'Shown Person',
        email: user.email,
        email_verified_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
        is_admin: false,
        two_factor_enabled: false,
        profile_photo_url: null,
        phone: null,
        timezone: null,
        country: null,
        available_credits: 0,
        held_credits: 0,
        credits_available_for_automation: 0,
        created_at: expect.stringMatching(/Z$/),
        updated_at: expect.stringMatching(/Z$/),
        blocked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
        is_blocked: true,
      },
    ])
    expect(res.text).not.toContain('password')
    expect(res.text).not.toContain('$argon2')
  })

  it('filters by name or email (any case, wildcards taken literally), role and block state', async () => {
    const tag = `zq${Date.now().toString(36)}`
    const { user: alice } = await createUser(t.database.db, { name: `Alice ${tag}` })
    const { user: bob } = await createUser(t.database.db, { email: `bob.${tag}@example.com`, isAdmin: true })
    const { user: carol } = await createUser(t.database.db, { name: `Carol ${tag}_100%`, blocked: true })
    const ids = async (query: string) => {
      const res = await admin.get(`/api/users?${query}`)
      expect(res.status).toBe(200)
      return res.data.data.map((u: { id: number }) => u.id)
    }
    expect(await ids(`q=${tag.toUpperCase()}`)).toEqual([carol.id, bob.id, alice.id])
    expect(await ids(`q=${tag}&role=admin`)).toEqual([bob.id])
    expect(await ids(`q=${tag}&role=user`)).toEqual([carol.id, alice.id])
    expect(await ids(`q=${tag}&blocked=true`)).toEqual([carol.id])
    expect(await ids(`q=${tag}&blocked=1`)).toEqual([carol.id])
    expect(await ids(`q=${tag}&blocked=0`)).toEqual([bob.id, alice.id])
    expect(await ids(`q=${tag}&blocked=false&role=user`)).toEqual([alice.id])
    // `%` and `_` are characters to find, not wildcards.
    expect(await ids(`q=${encodeURIComponent(`${tag}_100%`)}`)).toEqual([carol.id])
    // Alone, either would match everyone as a wildcard; only Carol's name holds them.
    expect(await ids(`q=${encodeURIComponent('%')}`)).toEqual([carol.id])
    expect(await ids('q=_')).toEqual([carol.id])
    expect(await ids(`q=${encodeURIComponent(`${tag}%Alice`)}`)).toEqual([])
  })

  it('keeps the filters and page size in the page links', async () => {
    const tag = `pl${Date.now().toString(36)}`
    for (let i = 0; i < 3; i++) await createUser(t.database.db, { name: `Linked ${tag} ${i}` })
    const res = await admin.get(`/api/users?q=${tag}&per_page=2&page=2`)
    expect(res.data).toMatchObject({ current_page: 2, per_page: 2, total: 3, from: 3, to: 3, last_page: 2 })
    expect(res.data.first_page_url).toBe(`${t.config.appUrl}/api/users?q=${tag}&per_page=2&page=1`)
    expect(res.data.data).toHaveLength(1)
  })

  it('refuses a bad page size, role or block filter with a 422', async () => {
    const res = await admin.get('/api/users?per_page=101&role=owner&blocked=maybe')
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({
      per_page: ['The per page field must not be greater than 100.'],
      role: ['The selected role is invalid.'],
      blocked: ['The selected blocked is invalid.'],
    })
    expect((await admin.get('/api/users?per_page=0')).status).toBe(422)
  })
})

describe('POST /api/users', () => {
  it('creates an unverified user (an admin when asked), answers 201 and mails UserCreated without the password', async () => {
    const email = uniqueEmail('created')
    const password = 'chosen by the admin 42'
    const res = await admin.post('/api/users', { name: 'New <b>Person</b>', email, password, is_admin: true })
    expect(res.status).toBe(201)
    expect(res.data).toMatchObject({
      name: 'New <b>Person</b>',
      email,
      is_admin: true,
      email_verified_at: null,
      is_blocked: false,
      blocked_at: null,
    })
    expect(await userRow(res.data.id)).toMatchObject({ isAdmin: true, emailVerifiedAt: null })

    const mail = await sink.waitForMailTo(email, 0)
    expect(mail.subject).toBe('Your account has been created')
    expect(mail.text).toContain('An administrator created a Trading App account for you')
    expect(mail.html).toContain('New &lt;b&gt;Person&lt;/b&gt;')
    expect(mail.text).not.toContain(password)
    expect(mail.html).not.toContain(password)
    // The link in it verifies the address.
    const link = mail.text.match(/Verify Email Address: (\S+)/)?.[1] ?? ''
    expect(link).toContain('/api/email/verify?')
    const verified = await new TestClient(t.baseUrl).get(link.replace(t.config.appUrl, ''))
    expect(verified.status).toBeLessThan(400)
    expect((await userRow(res.data.id))?.emailVerifiedAt).not.toBeNull()

    // And the new user can sign in with the password the admin chose.
    const login = await new TestClient(t.baseUrl).post('/api/login', { email, password })
    expect(login.status).toBe(200)
  })

  it('validates like registration: 422 on a taken email, a short password, a wrong confirmation', async () => {
    const { user } = await createUser(t.database.db)
    const taken = await admin.post('/api/users', {
      name: 'Twin',
      email: user.email.toUpperCase(),
      password: 'long enough secret',
    })
    expect(taken.status).toBe(422)
    expect(taken.data).toEqual({
      message: 'The email has already been taken.',
      errors: { email: ['The email has already been taken.'] },
    })
    const bad = await admin.post('/api/users', { name: '', email: 'not-an-email', password: 'short' })
    expect(bad.status).toBe(422)
    expect(bad.data.errors).toEqual({
      name: ['The name field is required.'],
      email: ['The email field must be a valid email address.'],
      password: ['The password field must be at least 8 characters.'],
    })
    const email = uniqueEmail('mismatch')
    const mismatch = await admin.post('/api/users', {
      name: 'Mismatch',
      email,
      password: 'long enough secret',
      password_confirmation: 'something else',
    })
    expect(mismatch.status).toBe(422)
    expect(mismatch.data.errors).toEqual({ password: ['The password field confirmation does not match.'] })
    expect((await admin.get(`/api/users?q=${encodeURIComponent(email)}`)).data.total).toBe(0)
  })
})

describe('GET /api/users/{id}', () => {
  it('answers the admin view of one user', async () => {
    const { user } = await createUser(t.database.db, { name: 'Looked Up' })
    const res = await admin.get(`/api/users/${user.id}`)
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ id: user.id, name: 'Looked Up', email: user.email, is_blocked: false })
  })

  it('answers 404 for an unknown id, and for an id that is not a positive integer', async () => {
    expect(await admin.get('/api/users/999999999')).toMatchObject({ status: 404, data: notFound(999999999) })
    for (const id of ['abc', '0', '-1', '1.5', '9'.repeat(40)]) {
      const res = await admin.get(`/api/users/${id}`)
      expect({ id, status: res.status }).toEqual({ id, status: 404 })
      expect(res.data.message).toBe(`The route api/users/${id} could not be found.`)
    }
  })
})
