import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import {
  confirmPassword,
  createUser,
  signedInClient,
  uniqueEmail,
} from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import { adminAuditRecords, creditTransactions, users } from '../../../db/schema/index.ts'
import { auditLedger } from '../../credits/ledger-audit.ts'

/** Admin changes of a user's email, password and role: confirmed first, then audited per field. */

const t = appUnderTest()

const LOOPBACK = /^(::ffff:)?127\.0\.0\.1$|^::1$/
const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const confirmationRequired = { status: 423, data: { message: 'Password confirmation required.' } }

const unconfirmedAdmin = () => signedInClient(t, { isAdmin: true, verified: true })
const admin = async () => {
  const signedIn = await unconfirmedAdmin()
  await confirmPassword(signedIn.client, signedIn.password)
  return signedIn
}

const userRow = async (id: number) => (await t.database.db.select().from(users).where(eq(users.id, id)))[0]
const auditRows = (userId: number) =>
  t.database.db
    .select()
    .from(adminAuditRecords)
    .where(eq(adminAuditRecords.subjectUserId, userId))
    .orderBy(adminAuditRecords.id)

describe('password confirmation', () => {
  it('an email, password or role change through PUT /api/users/{id} answers 423 without one, changing nothing', async () => {
    const { client } = await unconfirmedAdmin()
    const { user } = await createUser(t.database.db)
    for (const change of [
      { email: uniqueEmail('moved') },
      { password: 'a new password 1' },
      { is_admin: true },
    ]) {
      const res = await client.put(`/api/users/${user.id}`, { name: user.name, email: user.email, ...change })
      expect(res, JSON.stringify(change)).toMatchObject(confirmationRequired)
    }
    expect(await userRow(user.id)).toEqual(user)
    expect(await auditRows(user.id)).toEqual([])
    // A name, or a role sent as it already is, needs none and records nothing.
    const renamed = await client.put(`/api/users/${user.id}`, {
      name: 'Just Renamed',
      email: user.email.toUpperCase(),
      is_admin: false,
    })
    expect(renamed).toMatchObject({ status: 200, data: { name: 'Just Renamed' } })
    expect(await auditRows(user.id)).toEqual([])
  })

  it('POST /api/user/change-role/{user} and creating an admin answer 423 without one', async () => {
    const { client } = await unconfirmedAdmin()
    const { user } = await createUser(t.database.db)
    expect(await client.post(`/api/user/change-role/${user.id}`, { role: 'admin' })).toMatchObject(
      confirmationRequired,
    )
    expect(await userRow(user.id)).toEqual(user)
    const email = uniqueEmail('created')
    const body = { name: 'New Admin', email, password: 'long enough secret', is_admin: true }
    expect(await client.post('/api/users', body)).toMatchObject(confirmationRequired)
    expect(await t.database.db.select().from(users).where(eq(users.email, email))).toEqual([])
    // A plain user needs none.
    expect((await client.post('/api/users', { ...body, is_admin: false })).status).toBe(201)
  })
})

describe('the audit records', () => {
  it('PUT records each changed field: email (old and new), password (only that it changed), role', async () => {
    const { client, user: adminUser } = await admin()
    const { user } = await createUser(t.database.db)
    const email = uniqueEmail('moved')
    const password = 'set by the admin 99'
    const res = await client.put(`/api/users/${user.id}`, {
      name: user.name,
      email,
      password,
      password_confirmation: password,
      is_admin: true,
      reason: 'Ticket #12: account recovery',
    })
    expect(res.status).toBe(200)
    const who = {
      adminId: adminUser.id,
      adminEmail: adminUser.email,
      subjectUserId: user.id,
      reason: 'Ticket #12: account recovery',
      ipAddress: expect.stringMatching(LOOPBACK),
    }
    const stored = await auditRows(user.id)
    expect(stored).toEqual([
      expect.objectContaining({
        ...who,
        action: 'user.email',
        before: { email: user.email },
        after: { email },
      }),
      expect.objectContaining({ ...who, action: 'user.password', before: {}, after: { changed: true } }),
      expect.objectContaining({
        ...who,
        action: 'user.role',
        before: { is_admin: false },
        after: { is_admin: true },
      }),
    ])

    // Neither the password nor a hash of it, old or new, is in the records, the answer or the list.
    const hash = (await userRow(user.id))?.password as string
    const listed = await client.get(`/api/admin/users/${user.id}/billing`)
    expect(listed.data.audit.map((record: { action: string }) => record.action)).toEqual([
      'user.role',
      'user.password',
      'user.email',
    ])
    expect(listed.data.audit[1]).toEqual({
      id: expect.any(Number),
      action: 'user.password',
      admin_id: adminUser.id,
      admin_email: adminUser.email,
      user_id: user.id,
      reason: 'Ticket #12: account recovery',
      before: {},
      after: { changed: true },
      ip_address: expect.stringMatching(LOOPBACK),
      created_at: expect.stringMatching(DATE),
    })
    for (const text of [JSON.stringify(stored), res.text, listed.text]) {
      for (const secret of [password, hash, user.password]) expect(text).not.toContain(secret)
      expect(text).not.toMatch(/\$argon2|\$2y\$/)
    }
  })

  it('change-role records the role change with its reason (none when not given), and nothing for no change', async () => {
    const { client, user: adminUser } = await admin()
    const { user } = await createUser(t.database.db)
    expect((await client.post(`/api/user/change-role/${user.id}`, { role: 'user' })).status).toBe(200)
    expect(await auditRows(user.id)).toEqual([])
    const promoted = await client.post(`/api/user/change-role/${user.id}`, {
      role: 'admin',
      reason: 'New ops lead',
    })
    expect(promoted.status).toBe(200)
    expect((await client.post(`/api/user/change-role/${user.id}`, { role: 'user' })).status).toBe(200)
    expect(await auditRows(user.id)).toEqual([
      expect.objectContaining({
        action: 'user.role',
        adminId: adminUser.id,
        reason: 'New ops lead',
        before: { is_admin: false },
        after: { is_admin: true },
      }),
      expect.objectContaining({
        action: 'user.role',
        reason: null,
        before: { is_admin: true },
        after: { is_admin: false },
      }),
    ])
  })

  it('creating an admin records the role granted', async () => {
    const { client, user: adminUser } = await admin()
    const res = await client.post('/api/users', {
      name: 'Second Admin',
      email: uniqueEmail('admin'),
      password: 'long enough secret',
      is_admin: true,
      reason: 'Night shift',
    })
    expect(res.status).toBe(201)
    expect(await auditRows(res.data.id)).toEqual([
      expect.objectContaining({
        action: 'user.role',
        adminId: adminUser.id,
        reason: 'Night shift',
        before: { is_admin: false },
        after: { is_admin: true },
      }),
    ])
  })

  it('an edit that fails records nothing (a taken email), though it also set a password', async () => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    const { user: other } = await createUser(t.database.db)
    const taken = await client.put(`/api/users/${user.id}`, {
      name: user.name,
      email: other.email,
      password: 'a new password 1',
    })
    expect(taken.status).toBe(422)
    expect(await userRow(user.id)).toEqual(user)
    expect(await auditRows(user.id)).toEqual([])
    // The same edit with a free address goes through and records its two fields, no more.
    const email = uniqueEmail('free')
    const done = await client.put(`/api/users/${user.id}`, {
      name: user.name,
      email,
      password: 'a new password 1',
    })
    expect(done.status).toBe(200)
    expect((await auditRows(user.id)).map((record) => [record.action, record.after])).toEqual([
      ['user.email', { email }],
      ['user.password', { changed: true }],
    ])
  })
})

describe('blocking and deleting a user', () => {
  it('answer 423 without a recent password confirmation, changing nothing and recording nothing', async () => {
    const { client } = await unconfirmedAdmin()
    const { user } = await createUser(t.database.db, { credits: 5 })
    expect(await client.post(`/api/user/block-unblock/${user.id}`)).toMatchObject(confirmationRequired)
    expect(await client.delete(`/api/users/${user.id}`)).toMatchObject(confirmationRequired)
    expect(await userRow(user.id)).toEqual(user)
    expect(await auditRows(user.id)).toEqual([])
  })

  it('a block, an unblock and a deletion each leave one record; the money records stay after the deletion', async () => {
    const { client, user: acting } = await admin()
    const { user } = await createUser(t.database.db, { credits: 5 })
    expect((await client.post(`/api/user/block-unblock/${user.id}`)).status).toBe(200)
    expect((await client.post(`/api/user/block-unblock/${user.id}`)).status).toBe(200)
    expect((await client.delete(`/api/users/${user.id}`)).status).toBe(200)
    expect(await userRow(user.id)).toBeUndefined()
    const records = await auditRows(user.id)
    expect(records.map((r) => [r.action, r.adminId, r.before, r.after])).toEqual([
      ['user.block', acting.id, { blocked: false }, { blocked: true }],
      ['user.unblock', acting.id, { blocked: true }, { blocked: false }],
      [
        'user.delete',
        acting.id,
        {
          is_admin: false,
          blocked: false,
          available_credits: 5,
          held_credits: 0,
          credits_available_for_automation: 5,
        },
        { deleted: true },
      ],
    ])
    for (const record of records) {
      expect(record.ipAddress).toMatch(LOOPBACK)
      expect(JSON.stringify(record)).not.toContain(user.email)
    }
    const ledger = await t.database.db
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.userId, user.id))
    expect(ledger.map((row) => [row.kind, row.amount])).toEqual([['admin_adjustment', '5.0000']])
    expect((await auditLedger(t.database.db)).failed).toEqual([])
  })
})
