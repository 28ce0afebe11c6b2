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
import { outbox, sessions, userData, users } from '../../../db/schema/index.ts'

/** Editing and deleting users as an admin. */

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))
let admin: TestClient
let adminId: number
beforeAll(async () => {
  const signedIn = await signedInClient(t, { isAdmin: true, verified: true })
  // Email, password and role changes need a recent password confirmation (423 otherwise).
  await confirmPassword(signedIn.client, signedIn.password)
  admin = signedIn.client
  adminId = signedIn.user.id
})

const userRow = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]
const notFound = (id: number) => ({ message: `No query results for model [App\\Models\\User] ${id}` })

describe('PUT /api/users/{id}', () => {
  it('changes name and email; a new email is unverified again', async () => {
    const { user } = await createUser(t.database.db, { verified: true })
    const email = uniqueEmail('moved')
    const res = await admin.put(`/api/users/${user.id}`, {
      name: 'Renamed Person',
      email: email.toUpperCase(),
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ id: user.id, name: 'Renamed Person', email, email_verified_at: null })
    expect(await userRow(user.id)).toMatchObject({ name: 'Renamed Person', email, emailVerifiedAt: null })
  })

  it('keeps the verification when the email only changes case', async () => {
    const { user } = await createUser(t.database.db, { verified: true })
    const res = await admin.put(`/api/users/${user.id}`, { name: user.name, email: user.email.toUpperCase() })
    expect(res.status).toBe(200)
    expect(res.data.email_verified_at).not.toBeNull()
  })

  it('sets a new password, signs the user out everywhere and tells them, without the password', async () => {
    const { client, user, password } = await signedInClient(t)
    const res = await admin.put(`/api/users/${user.id}`, {
      name: user.name,
      email: user.email,
      password: 'set by the admin 99',
    })
    expect(res.status).toBe(200)
    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.subject).toBe('Your password has been changed')
    expect(mail.text).toContain('An administrator has set a new password')
    expect(`${mail.text}${mail.html}`).not.toContain('set by the admin 99')
    expect((await client.get('/api/user')).status).toBe(401)
    const guest = new TestClient(t.baseUrl)
    expect((await guest.post('/api/login', { email: user.email, password })).status).toBe(422)
    expect(
      (await guest.post('/api/login', { email: user.email, password: 'set by the admin 99' })).status,
    ).toBe(200)
  })

  it('keeps the password when none is sent', async () => {
    const { client, user, password } = await signedInClient(t)
    expect(
      (await admin.put(`/api/users/${user.id}`, { name: 'Same Password', email: user.email })).status,
    ).toBe(200)
    expect((await client.get('/api/user')).status).toBe(200)
    expect((await new TestClient(t.baseUrl).post('/api/login', { email: user.email, password })).status).toBe(
      200,
    )
    // Nothing to tell of: no such mail was queued (it would be, in the update's own transaction).
    const queued = await t.database.db.select().from(outbox)
    const told = queued.filter(({ payload }) => JSON.stringify(payload).includes(user.email))
    expect(told.map(({ payload }) => JSON.stringify(payload))).not.toContainEqual(
      expect.stringContaining('Your password has been changed'),
    )
  })

  it('changes the role when is_admin is sent, mailing UserRoleChanged', async () => {
    const { user } = await createUser(t.database.db)
    const res = await admin.put(`/api/users/${user.id}`, {
      name: user.name,
      email: user.email,
      is_admin: true,
    })
    expect(res.data.is_admin).toBe(true)
    const mail = await sink.waitForMailTo(user.email, 0)
    expect(mail.subject).toBe('Your role has been changed')
  })

  it('refuses an email another user has, a short password, and unknown ids, changing nothing', async () => {
    const { user } = await createUser(t.database.db, { name: 'Unchanged' })
    const { user: other } = await createUser(t.database.db)
    const taken = await admin.put(`/api/users/${user.id}`, { name: 'Changed', email: other.email })
    expect(taken).toMatchObject({
      status: 422,
      data: { errors: { email: ['The email has already been taken.'] } },
    })
    const short = await admin.put(`/api/users/${user.id}`, {
      name: 'Changed',
      email: user.email,
      password: 'short',
    })
    expect(short.status).toBe(422)
    expect(short.data.errors).toEqual({ password: ['The password field must be at least 8 characters.'] })
    expect(await userRow(user.id)).toEqual(user)
    const unknown = await admin.put('/api/users/999999998', { name: 'X', email: uniqueEmail() })
    expect(unknown).toMatchObject({ status: 404, data: notFound(999999998) })
  })
})

describe('DELETE /api/users/{id}', () => {
  it('deletes the user with what they own, and ends their sessions', async () => {
    const { client, user } = await signedInClient(t)
    expect((await client.post('/api/user/settings', { theme: 'dark' })).status).toBe(200)
    const res = await admin.delete(`/api/users/${user.id}`)
    expect(res).toMatchObject({ status: 200, data: { message: 'User deleted.' } })
    expect(await userRow(user.id)).toBeUndefined()
    expect(await t.database.db.select().from(userData).where(eq(userData.userId, user.id))).toEqual([])
    expect(await t.database.db.select().from(sessions).where(eq(sessions.userId, user.id))).toEqual([])
    expect((await client.get('/api/user')).status).toBe(401)
    expect(await admin.get(`/api/users/${user.id}`)).toMatchObject({ status: 404, data: notFound(user.id) })
  })

  it("refuses an admin's own account with a 403 saying so", async () => {
    const res = await admin.delete(`/api/users/${adminId}`)
    expect(res).toMatchObject({ status: 403, data: { message: 'You cannot delete your own account.' } })
    expect(await userRow(adminId)).toBeDefined()
    expect((await admin.get('/api/user')).status).toBe(200)
  })

  it('answers 404 for an unknown id', async () => {
    expect(await admin.delete('/api/users/999999997')).toMatchObject({
      status: 404,
      data: notFound(999999997),
    })
  })
})
