import { eq } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { TestClient } from '../../../test/helpers/client.ts'
import { createUser, signedInClient } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { sessions, type UserRow, userData, users } from '../../db/schema/index.ts'

const t = appUnderTest()

const me = (client: TestClient) => client.get('/api/user')
const userRow = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]

/** A second client signed in as the same account (another browser). */
async function anotherDevice(email: string, password: string): Promise<TestClient> {
  const client = new TestClient(t.baseUrl)
  const res = await client.post('/api/login', { email, password })
  expect(res.status).toBe(200)
  return client
}

describe('PUT /api/user-profile/password', () => {
  const change = (client: TestClient, current: string, next = 'brand new secret', confirmation = next) =>
    client.put('/api/user-profile/password', {
      current_password: current,
      password: next,
      password_confirmation: confirmation,
    })

  it('refuses a wrong current password (422 on current_password) and keeps the old one', async () => {
    const { client, user, password } = await signedInClient(t)
    const res = await change(client, 'not my password')
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The password is incorrect.',
      errors: { current_password: ['The password is incorrect.'] },
    })
    expect((await new TestClient(t.baseUrl).post('/api/login', { email: user.email, password })).status).toBe(
      200,
    )
  })

  it('reports a wrong current password and a mismatched confirmation together', async () => {
    const { client } = await signedInClient(t)
    const res = await change(client, 'wrong', 'brand new secret', 'something else')
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The password is incorrect. (and 1 more error)',
      errors: {
        current_password: ['The password is incorrect.'],
        password: ['The password field confirmation does not match.'],
      },
    })
  })

  it('requires the confirmation, and the rules registration has', async () => {
    const { client, password } = await signedInClient(t)
    const unconfirmed = await client.put('/api/user-profile/password', {
      current_password: password,
      password: 'brand new secret',
    })
    expect(unconfirmed.status).toBe(422)
    expect(unconfirmed.data.errors).toEqual({ password: ['The password field confirmation does not match.'] })
    const short = await change(client, password, 'short')
    expect(short.data.errors).toEqual({ password: ['The password field must be at least 8 characters.'] })
    const missing = await client.put('/api/user-profile/password', {})
    expect(missing.data.errors).toEqual({
      current_password: ['The current password field is required.'],
      password: ['The password field is required.'],
    })
  })

  it('changes the password, keeps this session and ends every other one of the user only', async () => {
    const { client, user, password } = await signedInClient(t)
    const otherDevice = await anotherDevice(user.email, password)
    const stranger = await signedInClient(t)
    const res = await change(client, password, 'brand new secret')
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Your password has been updated.' })
    expect((await me(client)).status).toBe(200)
    expect((await me(otherDevice)).status).toBe(401)
    expect((await me(stranger.client)).data.id).toBe(stranger.user.id)
    const login = (pw: string) =>
      new TestClient(t.baseUrl).post('/api/login', { email: user.email, password: pw })
    expect((await login(password)).status).toBe(422)
    expect((await login('brand new secret')).status).toBe(200)
  })
})

describe('DELETE /api/user-profile', () => {
  it('refuses a wrong or missing password and deletes nothing', async () => {
    const { client, user } = await signedInClient(t)
    const wrong = await client.delete('/api/user-profile', { password: 'not it' })
    expect(wrong.status).toBe(422)
    expect(wrong.data).toEqual({
      message: 'The password is incorrect.',
      errors: { password: ['The password is incorrect.'] },
    })
    const missing = await client.delete('/api/user-profile')
    expect(missing.status).toBe(422)
    expect(missing.data.errors).toEqual({ password: ['The password field is required.'] })
    expect(await userRow(user.id)).toBeDefined()
    expect((await me(client)).status).toBe(200)
  })

  it("does not take another user's password", async () => {
    const victim = await signedInClient(t)
    const { client, user } = await signedInClient(t, { password: 'attacker password' })
    const res = await client.delete('/api/user-profile', { password: victim.password })
    expect(res.status).toBe(422)
    expect(await userRow(user.id)).toBeDefined()
    expect(await userRow(victim.user.id)).toBeDefined()
  })

  it('deletes the account with its data and sessions, answers 200, and the cookie stops working', async () => {
    const { client, user, password } = await signedInClient(t)
    const otherDevice = await anotherDevice(user.email, password)
    const stranger = await signedInClient(t)
    expect((await client.post('/api/user/settings', { theme: 'dark' })).status).toBe(200)
    expect((await stranger.client.post('/api/user/settings', { theme: 'light' })).status).toBe(200)
    const oldCookie = client.cookies.get('app_session')

    const res = await client.delete('/api/user-profile', { password })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Your account has been deleted.' })

    expect(await userRow(user.id)).toBeUndefined()
    const db = t.database.db
    expect(await db.select().from(sessions).where(eq(sessions.userId, user.id))).toEqual([])
    expect(await db.select().from(userData).where(eq(userData.userId, user.id))).toEqual([])
    // The cookie the client had, replayed, and the other device: both signed out.
    const replay = new TestClient(t.baseUrl)
    replay.cookies.set('app_session', oldCookie ?? '')
    expect((await me(replay)).status).toBe(401)
    expect((await me(otherDevice)).status).toBe(401)
    expect((await me(client)).status).toBe(401)
    expect((await new TestClient(t.baseUrl).post('/api/login', { email: user.email, password })).status).toBe(
      422,
    )
    // Nobody else lost anything.
    expect((await me(stranger.client)).data.id).toBe(stranger.user.id)
    expect((await stranger.client.get('/api/user/settings')).data).toEqual({ theme: 'light' })
    // The client holds a fresh guest session and can sign up again straight away.
    const again = await client.post('/api/register', { name: 'Back', email: user.email, password })
    expect(again.status).toBe(201)
    expect(again.data.id).not.toBe(user.id)
  })
})

describe('DELETE /api/user-profile by an admin', () => {
  // A database of its own: "the last admin" means no other test's admins may be in it.
  const t = appUnderTest()
  /** The one admin who can sign in, whichever that is after each test. */
  let lastAdmin: { client: TestClient; user: UserRow; password: string }
  beforeAll(async () => {
    lastAdmin = await signedInClient(t, { isAdmin: true })
  })

  const LAST_ADMIN = { message: 'The last administrator cannot delete their own account.' }
  const activeAdmins = async () =>
    (await t.database.db.select().from(users).where(eq(users.isAdmin, true))).filter((u) => !u.blockedAt)

  it('refuses the last admin who can sign in with a 403, deleting nothing (a blocked admin does not count)', async () => {
    await createUser(t.database.db, { isAdmin: true, blocked: true })
    const res = await lastAdmin.client.delete('/api/user-profile', { password: lastAdmin.password })
    expect(res.status).toBe(403)
    expect(res.data).toEqual(LAST_ADMIN)
    expect((await activeAdmins()).map((u) => u.id)).toEqual([lastAdmin.user.id])
    expect((await lastAdmin.client.get('/api/users')).status).toBe(200)
    // A wrong password is still the 422 it always was.
    expect((await lastAdmin.client.delete('/api/user-profile', { password: 'nope' })).status).toBe(422)
  })

  it('lets an admin go while another remains, who then is the last', async () => {
    const second = await signedInClient(t, { isAdmin: true })
    const res = await lastAdmin.client.delete('/api/user-profile', { password: lastAdmin.password })
    expect(res.status).toBe(200)
    expect((await activeAdmins()).map((u) => u.id)).toEqual([second.user.id])
    lastAdmin = second
    const refused = await second.client.delete('/api/user-profile', { password: second.password })
    expect(refused.status).toBe(403)
    expect(refused.data).toEqual(LAST_ADMIN)
  })

  it('leaves one admin, never none, when the last two delete their accounts at once', async () => {
    const other = await signedInClient(t, { isAdmin: true })
    const both = [lastAdmin, other]
    const answers = await Promise.all(
      both.map(({ client, password }) => client.delete('/api/user-profile', { password })),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([200, 403])
    const remaining = await activeAdmins()
    expect(remaining).toHaveLength(1)
    lastAdmin = both.find((admin) => admin.user.id === remaining[0]?.id) ?? lastAdmin
  })

  it('deletes a plain user as before, whatever the admins', async () => {
    const { client, user, password } = await signedInClient(t)
    expect((await client.delete('/api/user-profile', { password })).status).toBe(200)
    expect((await t.database.db.select().from(users).where(eq(users.id, user.id))).length).toBe(0)
  })
})
