import { eq } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { confirmPassword, createUser, signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../../test/helpers/under-test.ts'
import { sessions, users } from '../../../db/schema/index.ts'

/** Blocking and roles: who can sign in, and who stays an admin. */

const sink = mailSinkUnderTest()

const notFound = (id: number) => ({ message: `No query results for model [App\\Models\\User] ${id}` })

describe('POST /api/user/block-unblock/{user}', () => {
  const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))
  let admin: TestClient
  let adminId: number
  beforeAll(async () => {
    const signedIn = await signedInClient(t, { isAdmin: true, verified: true })
    // Blocking needs a recent password confirmation (423 otherwise).
    await confirmPassword(signedIn.client, signedIn.password)
    admin = signedIn.client
    adminId = signedIn.user.id
  })

  const login = (email: string, password: string) =>
    new TestClient(t.baseUrl).post('/api/login', { email, password })

  it('blocks: the open session is signed out at once, sign-in is refused, and the user is mailed', async () => {
    const { client, user, password } = await signedInClient(t)
    expect((await client.get('/api/user')).status).toBe(200)

    const res = await admin.post(`/api/user/block-unblock/${user.id}`)
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      message: 'User blocked.',
      user: { id: user.id, is_blocked: true, blocked_at: expect.stringMatching(/Z$/) },
    })
    // One instant for the block and the row's change.
    expect(res.data.user.updated_at).toBe(res.data.user.blocked_at)
    expect(await t.database.db.select().from(sessions).where(eq(sessions.userId, user.id))).toEqual([])
    expect(await client.get('/api/user')).toMatchObject({
      status: 401,
      data: { message: 'Unauthenticated.' },
    })
    // The session (and its CSRF token) is gone, so a write is refused before the guard even looks.
    expect((await client.post('/api/user/settings', { a: 1 })).status).toBe(419)

    const refused = await login(user.email, password)
    expect(refused.status).toBe(422)
    expect(refused.data.errors).toEqual({ email: ['This account has been blocked. Please contact support.'] })

    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.subject).toBe('Your account has been blocked')
    expect(mail.text).toContain('cannot sign in until it is unblocked')
  })

  it('unblocks a blocked user, who can sign in again, and mails them', async () => {
    const { user, password } = await createUser(t.database.db, { blocked: true })
    const res = await admin.post(`/api/user/block-unblock/${user.id}`)
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      message: 'User unblocked.',
      user: { is_blocked: false, blocked_at: null },
    })
    expect((await t.database.db.select().from(users).where(eq(users.id, user.id)))[0]?.blockedAt).toBeNull()
    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.subject).toBe('Your account has been unblocked')
    const client = new TestClient(t.baseUrl)
    expect((await client.post('/api/login', { email: user.email, password })).status).toBe(200)
    expect((await client.get('/api/user')).status).toBe(200)
  })

  it('lets an admin block another admin, who loses access at once', async () => {
    const { client: other, user } = await signedInClient(t, { isAdmin: true })
    expect((await other.get('/api/users')).status).toBe(200)
    expect((await admin.post(`/api/user/block-unblock/${user.id}`)).status).toBe(200)
    expect((await other.get('/api/users')).status).toBe(401)
  })

  it('refuses to let an admin block themself (403), changing nothing', async () => {
    const res = await admin.post(`/api/user/block-unblock/${adminId}`)
    expect(res).toMatchObject({ status: 403, data: { message: 'You cannot block your own account.' } })
    expect((await admin.get('/api/user')).status).toBe(200)
    expect((await t.database.db.select().from(users).where(eq(users.id, adminId)))[0]?.blockedAt).toBeNull()
  })

  it('answers 404 for an unknown or malformed id', async () => {
    expect(await admin.post('/api/user/block-unblock/999999996')).toMatchObject({
      status: 404,
      data: notFound(999999996),
    })
    expect((await admin.post('/api/user/block-unblock/abc')).status).toBe(404)
  })
})

describe('POST /api/user/change-role/{user}', () => {
  const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))
  let admin: TestClient
  let adminId: number
  beforeAll(async () => {
    const signedIn = await signedInClient(t, { isAdmin: true, verified: true })
    // A role change needs a recent password confirmation (423 otherwise).
    await confirmPassword(signedIn.client, signedIn.password)
    admin = signedIn.client
    adminId = signedIn.user.id
  })

  const isAdmin = async (id: number) =>
    (await t.database.db.select().from(users).where(eq(users.id, id)))[0]?.isAdmin

  it('refuses to demote the last admin (422 on role), who keeps access', async () => {
    // The only admin of this database so far.
    const res = await admin.post(`/api/user/change-role/${adminId}`, { role: 'user' })
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The last administrator cannot be demoted.',
      errors: { role: ['The last administrator cannot be demoted.'] },
    })
    expect(await isAdmin(adminId)).toBe(true)
    expect((await admin.get('/api/users')).status).toBe(200)
    // The same through PUT's is_admin.
    const me = (await admin.get(`/api/users/${adminId}`)).data
    const put = await admin.put(`/api/users/${adminId}`, { name: me.name, email: me.email, is_admin: false })
    expect(put.status).toBe(422)
    expect(put.data.errors).toEqual({ is_admin: ['The last administrator cannot be demoted.'] })
    expect(await isAdmin(adminId)).toBe(true)
  })

  it('does not count a blocked admin: the last admin who can sign in stays', async () => {
    const { user: blocked } = await createUser(t.database.db, { isAdmin: true, blocked: true })
    const res = await admin.post(`/api/user/change-role/${adminId}`, { role: 'user' })
    expect(res.status).toBe(422)
    expect(await isAdmin(blocked.id)).toBe(true)
    expect(await isAdmin(adminId)).toBe(true)
  })

  it('promotes a user, who gets the admin routes, and mails them', async () => {
    const { client, user } = await signedInClient(t)
    expect((await client.get('/api/users')).status).toBe(403)
    const res = await admin.post(`/api/user/change-role/${user.id}`, { role: 'admin' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      message: "The user's role is now admin.",
      user: { id: user.id, is_admin: true },
    })
    expect((await client.get('/api/users')).status).toBe(200)
    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.subject).toBe('Your role has been changed')
    expect(mail.text).toContain('made you an administrator')
  })

  it('demotes an admin, who loses the admin routes, and mails them', async () => {
    const { client, user } = await signedInClient(t, { isAdmin: true })
    const res = await admin.post(`/api/user/change-role/${user.id}`, { role: 'user' })
    expect(res).toMatchObject({ status: 200, data: { user: { is_admin: false } } })
    expect(await client.get('/api/users')).toMatchObject({
      status: 403,
      data: { message: 'This action is unauthorized.' },
    })
    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.text).toContain('no longer have administrator access')
  })

  it('mails nothing when the role does not change', async () => {
    const { user } = await createUser(t.database.db)
    expect((await admin.post(`/api/user/change-role/${user.id}`, { role: 'user' })).status).toBe(200)
    // A real change afterwards mails them; once everything due is delivered, that is the only mail.
    await admin.post(`/api/user/change-role/${user.id}`, { role: 'admin' })
    await sink.waitForMailTo(user.email, 0)
    await t.app.outbox.drain()
    expect(sink.to(user.email).map((m) => m.text.includes('made you an administrator'))).toEqual([true])
  })

  it('lets an admin demote themself while another admin remains', async () => {
    const { client, user, password } = await signedInClient(t, { isAdmin: true })
    await confirmPassword(client, password)
    const res = await client.post(`/api/user/change-role/${user.id}`, { role: 'user' })
    expect(res).toMatchObject({ status: 200, data: { user: { is_admin: false } } })
    expect((await client.get('/api/users')).status).toBe(403)
  })

  it('refuses a role that is neither user nor admin, and unknown ids', async () => {
    const { user } = await createUser(t.database.db)
    const res = await admin.post(`/api/user/change-role/${user.id}`, { role: 'owner' })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ role: ['The selected role is invalid.'] })
    const missing = await admin.post(`/api/user/change-role/${user.id}`, {})
    expect(missing.data.errors).toEqual({ role: ['The role field is required.'] })
    expect(await admin.post('/api/user/change-role/999999995', { role: 'admin' })).toMatchObject({
      status: 404,
      data: notFound(999999995),
    })
  })
})

describe('two admins demoting each other at once', () => {
  it('leave one admin, never none: the second to run finds its caller no longer an admin', async () => {
    const t = await buildTestApp({ env: { MAIL_URL: sink.url } })
    try {
      const a = await signedInClient(t, { isAdmin: true })
      const b = await signedInClient(t, { isAdmin: true })
      await Promise.all([confirmPassword(a.client, a.password), confirmPassword(b.client, b.password)])
      const [byA, byB] = await Promise.all([
        a.client.post(`/api/user/change-role/${b.user.id}`, { role: 'user' }),
        b.client.post(`/api/user/change-role/${a.user.id}`, { role: 'user' }),
      ])
      expect([byA.status, byB.status].sort()).toEqual([200, 403])
      const admins = await t.database.db.select().from(users).where(eq(users.isAdmin, true))
      expect(admins).toHaveLength(1)
    } finally {
      await t.close()
    }
  })
})
