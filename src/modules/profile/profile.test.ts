import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { confirmPassword, createUser, signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import type { ReceivedMail } from '../../../test/helpers/smtp-sink.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { outbox, users } from '../../db/schema/index.ts'

const APP_URL = 'https://api.trading.test'
const laravelDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url, APP_URL } }))

const me = (client: TestClient) => client.get('/api/user')
const userRow = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]

/** A signed-in user whose session just confirmed the password, as the app does before an email change. */
async function confirmedClient(overrides: Parameters<typeof signedInClient>[1] = {}) {
  const signedIn = await signedInClient(t, overrides)
  await confirmPassword(signedIn.client, signedIn.password)
  return signedIn
}

/** The verification link mailed to `email` (the next mail beyond the `already` it had), as a path to GET. */
async function verificationLinkFor(email: string, already = 0): Promise<string> {
  const mail = await sink.waitForMailTo(email, already)
  expect(mail.subject).toBe('Verify Email Address')
  const link = mail.text.match(/https:\/\/api\.trading\.test(\/api\/email\/verify\?\S+)/)?.[1]
  if (!link) throw new Error(`no link in ${mail.text}`)
  return link
}

describe('PUT /api/user-profile/profile-information', () => {
  it('saves name and email and answers the whole user object', async () => {
    const { client, user } = await confirmedClient({ verified: true })
    t.clock.advance(minutes(1))
    const email = uniqueEmail('renamed')
    const res = await client.put('/api/user-profile/profile-information', { name: '  Grace Hopper ', email })
    expect(res.status).toBe(200)
    // The new address waits for its verification: the account keeps (and shows) the current one.
    expect(res.data).toEqual({
      id: user.id,
      name: 'Grace Hopper',
      email: user.email,
      email_verified_at: expect.stringMatching(laravelDate),
      is_admin: false,
      two_factor_enabled: false,
      profile_photo_url: null,
      phone: null,
      timezone: null,
      country: null,
      available_credits: 0,
      held_credits: 0,
      credits_available_for_automation: 0,
      created_at: expect.stringMatching(laravelDate),
      updated_at: expect.stringMatching(laravelDate),
    })
    expect(res.data.updated_at).not.toBe(res.data.created_at)
    expect((await me(client)).data).toEqual(res.data)
  })

  it('keeps the current address until the new one is verified, then switches to it', async () => {
    const { client, user, password } = await confirmedClient({ verified: true })
    const email = uniqueEmail('Moved').toLowerCase()
    const res = await client.put('/api/user-profile/profile-information', {
      name: user.name,
      email: email.toUpperCase(),
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      email: user.email,
      email_verified_at: expect.stringMatching(laravelDate),
    })
    const link = await verificationLinkFor(email)
    // Until then the current address signs in and gets reset links; the new one does neither.
    expect((await new TestClient(t.baseUrl).post('/api/login', { email, password })).status).toBe(422)
    expect((await new TestClient(t.baseUrl).post('/api/login', { email: user.email, password })).status).toBe(
      200,
    )
    const verified = await client.get(link)
    expect(verified.status).toBe(200)
    expect(verified.data).toEqual({ message: 'Email verified.' })
    const after = (await me(client)).data
    expect(after).toMatchObject({ email, email_verified_at: expect.stringMatching(laravelDate) })
    expect((await new TestClient(t.baseUrl).post('/api/login', { email, password })).status).toBe(200)
    expect((await new TestClient(t.baseUrl).post('/api/login', { email: user.email, password })).status).toBe(
      422,
    )
    // The link has done its work: followed again it changes nothing.
    expect((await client.get(link)).status).toBe(200)
    expect((await me(client)).data.email).toBe(email)
  })

  it('tells the current address in a mail with no link, queued in the outbox with the change', async () => {
    const { client, user } = await confirmedClient({ verified: true })
    const email = uniqueEmail('elsewhere')
    const res = await client.put('/api/user-profile/profile-information', { name: user.name, email })
    expect(res.status).toBe(200)
    const notice = await sink.waitForMailTo(user.email, 0)
    expect(notice.subject).toBe('Your email address is being changed')
    expect(notice.text).toContain('this address stays the one you sign in with')
    expect(notice.text).not.toMatch(/https?:\/\//)
    expect(notice.html).not.toMatch(/<a\s/i)
    expect(notice.text).not.toContain(email)
    // Both mails were written with the change: one outbox row each, to each address.
    const rows = await t.database.db.select().from(outbox)
    const mailedTo = rows.map((row) => (row.payload as { to?: string }).to)
    expect(mailedTo.filter((to) => to === email)).toHaveLength(1)
    expect(mailedTo.filter((to) => to === user.email)).toHaveLength(1)
  })

  it('sends password reset links only to the current address while the new one waits', async () => {
    const { client, user } = await confirmedClient({ verified: true })
    const email = uniqueEmail('would-be-owner')
    await client.put('/api/user-profile/profile-information', { name: user.name, email })
    await verificationLinkFor(email)
    const isReset = (mail: ReceivedMail) => mail.subject === 'Reset Password Notification'
    const forgot = (address: string) =>
      new TestClient(t.baseUrl).post('/api/password/email', { email: address })
    expect((await forgot(email)).status).toBe(200)
    expect((await forgot(user.email)).status).toBe(200)
    await sink.waitFor((mail) => isReset(mail) && sink.to(user.email).includes(mail))
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(sink.to(email).filter(isReset)).toEqual([])
  })

  it('a link to a replaced new address no longer works; the latest one does', async () => {
    const { client, user } = await confirmedClient({ verified: true })
    const first = uniqueEmail('first')
    const second = uniqueEmail('second')
    await client.put('/api/user-profile/profile-information', { name: user.name, email: first })
    const firstLink = await verificationLinkFor(first)
    await client.put('/api/user-profile/profile-information', { name: user.name, email: second })
    const secondLink = await verificationLinkFor(second)
    const stale = await client.get(firstLink)
    expect(stale.status).toBe(403)
    expect((await me(client)).data.email).toBe(user.email)
    expect((await client.get(secondLink)).status).toBe(200)
    expect((await me(client)).data.email).toBe(second)
  })

  it('answers 422 on email when another account took the new address before it was verified', async () => {
    const { client, user } = await confirmedClient({ verified: true })
    const email = uniqueEmail('contested')
    await client.put('/api/user-profile/profile-information', { name: user.name, email })
    const link = await verificationLinkFor(email)
    await createUser(t.database.db, { email })
    const res = await client.get(link)
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The email has already been taken.',
      errors: { email: ['The email has already been taken.'] },
    })
    expect((await me(client)).data.email).toBe(user.email)
  })

  it('resends the link to the new address while it waits', async () => {
    const { client, user } = await confirmedClient({ verified: true })
    const email = uniqueEmail('resend')
    await client.put('/api/user-profile/profile-information', { name: user.name, email })
    await verificationLinkFor(email)
    const resend = await client.post('/api/user-profile/email/verification-notification')
    expect(resend.data).toEqual({ message: 'Verification link sent.' })
    const link = await verificationLinkFor(email, 1)
    expect((await client.get(link)).status).toBe(200)
    expect((await me(client)).data.email).toBe(email)
  })

  it('keeps the verification (and mails nothing, asking no confirmation) when the email only changes case', async () => {
    const { client, user, password } = await signedInClient(t, { verified: true })
    const res = await client.put('/api/user-profile/profile-information', {
      name: 'New Name',
      email: user.email.toUpperCase(),
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ name: 'New Name', email: user.email })
    expect(res.data.email_verified_at).toMatch(laravelDate)
    // A later change mails its own link and notice; had the first one mailed, that mail would be there first.
    await confirmPassword(client, password)
    const sentinel = uniqueEmail('sentinel')
    await client.put('/api/user-profile/profile-information', { name: 'New Name', email: sentinel })
    await verificationLinkFor(sentinel)
    await sink.waitForMailTo(user.email, 0)
    expect(sink.to(user.email).map((mail) => mail.subject)).toEqual(['Your email address is being changed'])
  })

  it('refuses an email another user has, in any case, and changes nothing', async () => {
    const other = await createUser(t.database.db)
    const { client, user } = await confirmedClient({ verified: true })
    const res = await client.put('/api/user-profile/profile-information', {
      name: 'Taken',
      email: other.user.email.toUpperCase(),
    })
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The email has already been taken.',
      errors: { email: ['The email has already been taken.'] },
    })
    const row = await userRow(user.id)
    expect(row).toMatchObject({ name: user.name, email: user.email })
    expect(row?.emailVerifiedAt).not.toBeNull()
    expect((await userRow(other.user.id))?.email).toBe(other.user.email)
  })

  it("answers 422 in Laravel's shape for missing, malformed and oversized fields", async () => {
    const { client } = await signedInClient(t)
    const missing = await client.put('/api/user-profile/profile-information', {})
    expect(missing.status).toBe(422)
    expect(missing.data).toEqual({
      message: 'The name field is required. (and 1 more error)',
      errors: { name: ['The name field is required.'], email: ['The email field is required.'] },
    })
    const bad = await client.put('/api/user-profile/profile-information', {
      name: 'x'.repeat(256),
      email: 'not-an-email',
    })
    expect(bad.status).toBe(422)
    expect(bad.data.errors).toEqual({
      name: ['The name field must not be greater than 255 characters.'],
      email: ['The email field must be a valid email address.'],
    })
    const nul = await client.put('/api/user-profile/profile-information', {
      name: 'a\u0000b',
      email: uniqueEmail(),
    })
    expect(nul.status).toBe(422)
    expect(nul.data.errors).toEqual({ name: ['The name field format is invalid.'] })
  })

  it('ignores the other profile fields', async () => {
    const { client, user } = await signedInClient(t)
    const res = await client.put('/api/user-profile/profile-information', {
      name: user.name,
      email: user.email,
      phone: '+33612345678',
      is_admin: true,
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ phone: null, is_admin: false })
  })
})

describe('PUT /api/user-profile/profile', () => {
  it('saves phone (as E.164), timezone and country with name and email', async () => {
    const { client, user } = await signedInClient(t)
    const res = await client.put('/api/user-profile/profile', {
      name: 'Ada',
      email: user.email,
      phone: '+33 6 12-34.56 78',
      timezone: 'Europe/Paris',
      country: 'FR',
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      id: user.id,
      name: 'Ada',
      phone: '+33612345678',
      timezone: 'Europe/Paris',
      country: 'FR',
    })
    expect((await me(client)).data).toEqual(res.data)
  })

  it('keeps fields left out, and clears those sent as null or empty', async () => {
    const { client, user } = await signedInClient(t)
    const full = {
      name: user.name,
      email: user.email,
      phone: '+1 (415) 555-0100',
      timezone: 'UTC',
      country: 'US',
    }
    expect((await client.put('/api/user-profile/profile', full)).status).toBe(200)
    const kept = await client.put('/api/user-profile/profile', { name: 'Only Name', email: user.email })
    expect(kept.data).toMatchObject({
      name: 'Only Name',
      phone: '+14155550100',
      timezone: 'UTC',
      country: 'US',
    })
    const cleared = await client.put('/api/user-profile/profile', {
      name: 'Only Name',
      email: user.email,
      phone: null,
      timezone: '',
      country: '   ',
    })
    expect(cleared.status).toBe(200)
    expect(cleared.data).toMatchObject({ phone: null, timezone: null, country: null })
  })

  it('accepts IANA aliases such as Asia/Kolkata, and every assigned country code', async () => {
    const { client, user } = await signedInClient(t)
    for (const [timezone, country] of [
      ['Asia/Kolkata', 'IN'],
      ['Europe/Kyiv', 'UA'],
      ['America/Argentina/Buenos_Aires', 'AR'],
      ['UTC', 'GB'],
    ]) {
      const res = await client.put('/api/user-profile/profile', {
        name: 'Zoned',
        email: user.email,
        timezone,
        country,
      })
      expect(res.status, `${timezone} ${country}`).toBe(200)
      expect(res.data).toMatchObject({ timezone, country })
    }
  })

  it('reports every bad field at once, with the field each is about', async () => {
    const { client, user } = await signedInClient(t)
    expect(
      (
        await client.put('/api/user-profile/profile', {
          name: 'Set',
          email: user.email,
          phone: '+4915112345678',
        })
      ).status,
    ).toBe(200)
    const res = await client.put('/api/user-profile/profile', {
      name: '',
      email: user.email,
      phone: '0612345678',
      timezone: 'Mars/Olympus_Mons',
      country: 'fr',
    })
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The name field is required. (and 3 more errors)',
      errors: {
        name: ['The name field is required.'],
        phone: ['The phone field format is invalid.'],
        timezone: ['The timezone field must be a valid timezone.'],
        country: ['The country field must be a valid ISO 3166-1 alpha-2 country code.'],
      },
    })
    // Nothing was saved.
    expect((await me(client)).data).toMatchObject({ name: 'Set', phone: '+4915112345678', timezone: null })
  })

  it.each([
    ['phone', '+1 555'],
    ['phone', `+1${'2'.repeat(15)}`],
    ['phone', '+33 6 12 34 56 78 ext 9'],
    ['timezone', 'europe/paris'],
    ['timezone', '+05:00'],
    ['timezone', 'Europe/../../etc/passwd'],
    ['country', 'XK'],
    ['country', 'EU'],
    ['country', 'UK'],
    ['country', 'FRA'],
  ])('refuses %s %j', async (field, value) => {
    const { client, user } = await signedInClient(t)
    const res = await client.put('/api/user-profile/profile', {
      name: 'N',
      email: user.email,
      [field]: value,
    })
    expect(res.status).toBe(422)
    expect(Object.keys(res.data.errors)).toEqual([field])
  })

  it('keeps the current address and mails a link to the new one', async () => {
    const { client, user } = await confirmedClient({ verified: true })
    const email = uniqueEmail('profile-move')
    const res = await client.put('/api/user-profile/profile', { name: 'Mover', email, country: 'DE' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      name: 'Mover',
      email: user.email,
      email_verified_at: expect.stringMatching(laravelDate),
      country: 'DE',
    })
    await client.get(await verificationLinkFor(email))
    expect((await me(client)).data).toMatchObject({ email, country: 'DE' })
  })

  it('cannot take the email of another user', async () => {
    const other = await createUser(t.database.db)
    const { client } = await confirmedClient()
    const res = await client.put('/api/user-profile/profile', { name: 'N', email: other.user.email })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ email: ['The email has already been taken.'] })
  })
})
