import { createHash } from 'node:crypto'
import { eq, sql } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { TestClient } from '../../test/helpers/client.ts'
import { confirmPassword, createUser, signedInClient, uniqueEmail } from '../../test/helpers/factories.ts'
import { mailRefusal } from '../../test/helpers/refuse-mail.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'
import { outbox, passwordResetTokens, users } from '../db/schema/index.ts'

// Each change that mails someone queues that mail in its own transaction: when the mail cannot be
// queued (here the database refuses it), the change does not happen either, and trying again once
// the database takes mail again does both. The failed try is a server error (500, nothing else told),
// but never half a change: an account nobody was asked to verify, or a password changed unannounced.

const t = appUnderTest()
let refusal: Awaited<ReturnType<typeof mailRefusal>>
beforeAll(async () => {
  refusal = await mailRefusal(t.database.db)
})

const SERVER_ERROR = { message: 'Server Error' }
const NEW_PASSWORD = 'a brand new secret'

const userByEmail = async (email: string) =>
  (await t.database.db.select().from(users).where(eq(users.email, email)))[0]

/** The subjects of the mails queued to `to`, oldest first. */
const subjectsTo = async (to: string) =>
  (
    await t.database.db.select().from(outbox).where(sql`${outbox.payload}->>'to' = ${to}`).orderBy(outbox.id)
  ).map((row) => row.payload.subject)

const login = (email: string, password: string) =>
  new TestClient(t.baseUrl).post('/api/login', { email, password })

describe('mail queued in the transaction of the change that causes it', () => {
  it('register: no account without its verification mail', async () => {
    const email = uniqueEmail('signup')
    const body = { name: 'New Trader', email, password: 'correct horse battery' }
    await refusal.refuse(email)
    const failed = await new TestClient(t.baseUrl).post('/api/register', body)
    expect(failed.status).toBe(500)
    expect(failed.data).toEqual(SERVER_ERROR)
    expect(await userByEmail(email)).toBeUndefined()

    await refusal.allow(email)
    const res = await new TestClient(t.baseUrl).post('/api/register', body)
    expect(res.status).toBe(201)
    expect(await subjectsTo(email)).toEqual(['Verify Email Address'])
  })

  it('password reset: the token and the old password stay until the notice can be queued', async () => {
    const { user, password } = await createUser(t.database.db)
    const token = 'b'.repeat(64)
    await t.database.db.insert(passwordResetTokens).values({
      email: user.email,
      token: createHash('sha256').update(token).digest('hex'),
      createdAt: t.clock.now(),
    })
    const reset = () =>
      new TestClient(t.baseUrl).post('/api/password/reset', {
        token,
        email: user.email,
        password: NEW_PASSWORD,
      })
    await refusal.refuse(user.email)
    const failed = await reset()
    expect(failed.status).toBe(500)
    expect(failed.data).toEqual(SERVER_ERROR)
    expect((await login(user.email, password)).status).toBe(200)

    await refusal.allow(user.email)
    expect((await reset()).status).toBe(200)
    expect((await login(user.email, NEW_PASSWORD)).status).toBe(200)
    expect(await subjectsTo(user.email)).toEqual(['Your password has been changed'])
  })

  it('password update: the owner is told, in the same transaction', async () => {
    const { client, user, password } = await signedInClient(t)
    const update = () =>
      client.put('/api/user-profile/password', {
        current_password: password,
        password: NEW_PASSWORD,
        password_confirmation: NEW_PASSWORD,
      })
    await refusal.refuse(user.email)
    const failed = await update()
    expect(failed.status).toBe(500)
    expect(failed.data).toEqual(SERVER_ERROR)
    expect((await login(user.email, password)).status).toBe(200)

    await refusal.allow(user.email)
    const res = await update()
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Your password has been updated.' })
    expect((await login(user.email, NEW_PASSWORD)).status).toBe(200)
    expect(await subjectsTo(user.email)).toEqual(['Your password has been changed'])
  })

  it('email change: no pending address without the link to it and the notice to the current one', async () => {
    const { client, user, password } = await signedInClient(t)
    await confirmPassword(client, password)
    const next = uniqueEmail('moving')
    const change = () => client.put('/api/user-profile/profile-information', { name: user.name, email: next })
    await refusal.refuse(user.email)
    expect((await change()).status).toBe(500)
    expect((await userByEmail(user.email))?.pendingEmail).toBeNull()
    expect(await subjectsTo(next)).toEqual([])

    await refusal.allow(user.email)
    expect((await change()).status).toBe(200)
    expect((await userByEmail(user.email))?.pendingEmail).toBe(next)
    expect(await subjectsTo(next)).toEqual(['Verify Email Address'])
    expect(await subjectsTo(user.email)).toEqual(['Your email address is being changed'])
  })
})
