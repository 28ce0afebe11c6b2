import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import type { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { createUser, signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import { SmtpSink } from '../../../test/helpers/smtp-sink.ts'
import { users } from '../../db/schema/index.ts'

const APP_URL = 'https://api.trading.test'
const laravelDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

let sink: SmtpSink
let t: TestApp
beforeAll(async () => {
  sink = await new SmtpSink().start()
  t = await buildTestApp({ env: { MAIL_URL: sink.url, APP_URL } })
})
afterAll(async () => {
  await t.close()
  await sink.stop()
})

const me = (client: TestClient) => client.get('/api/user')
const userRow = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]

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
    const { client, user } = await signedInClient(t, { verified: true })
    t.clock.advance(minutes(1))
    const email = uniqueEmail('renamed')
    const res = await client.put('/api/user-profile/profile-information', { name: '  Grace Hopper ', email })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({
      id: user.id,
      name: 'Grace Hopper',
      email,
      email_verified_at: null,
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

  it('unverifies a changed address and mails it a link that verifies it again', async () => {
    const { client, user } = await signedInClient(t, { verified: true })
    const email = uniqueEmail('Moved').toLowerCase()
    const res = await client.put('/api/user-profile/profile-information', {
      name: user.name,
      email: email.toUpperCase(),
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ email, email_verified_at: null })
    const link = await verificationLinkFor(email)
    expect(sink.to(user.email)).toEqual([])
    const verified = await client.get(link)
    expect(verified.status).toBe(200)
    expect((await me(client)).data.email_verified_at).toMatch(laravelDate)
  })

  it('keeps the verification (and mails nothing) when the email only changes case', async () => {
    const { client, user } = await signedInClient(t, { verified: true })
    const res = await client.put('/api/user-profile/profile-information', {
      name: 'New Name',
      email: user.email.toUpperCase(),
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ name: 'New Name', email: user.email })
    expect(res.data.email_verified_at).toMatch(laravelDate)
    // A later change mails its own link; had the first one mailed, that mail would be there first.
    const sentinel = uniqueEmail('sentinel')
    await client.put('/api/user-profile/profile-information', { name: 'New Name', email: sentinel })
    await verificationLinkFor(sentinel)
    expect(sink.to(user.email)).toEqual([])
  })

  it('refuses an email another user has, in any case, and changes nothing', async () => {
    const other = await createUser(t.database.db)
    const { client, user } = await signedInClient(t, { verified: true })
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

  it('unverifies a changed address and mails the new one', async () => {
    const { client } = await signedInClient(t, { verified: true })
    const email = uniqueEmail('profile-move')
    const res = await client.put('/api/user-profile/profile', { name: 'Mover', email, country: 'DE' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ email, email_verified_at: null, country: 'DE' })
    await verificationLinkFor(email)
  })

  it('cannot take the email of another user', async () => {
    const other = await createUser(t.database.db)
    const { client } = await signedInClient(t)
    const res = await client.put('/api/user-profile/profile', { name: 'N', email: other.user.email })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ email: ['The email has already been taken.'] })
  })
})
