import { and, eq, sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import {
  confirmPassword,
  createUser,
  grantCredits,
  signedInClient,
} from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import { adminAuditRecords, creditTransactions, users } from '../../../db/schema/index.ts'

/** Admin billing changes need a recent password confirmation and a reason, and are audited. */

const t = appUnderTest()

const billingPath = (userId: number) => `/api/admin/users/${userId}/billing`
const fieldError = (field: string, message: string) => ({ message, errors: { [field]: [message] } })
const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
// The test client talks to the app over loopback; request.ip is that address.
const LOOPBACK = /^(::ffff:)?127\.0\.0\.1$|^::1$/
const PASSWORD_TIMEOUT_MS = 10_800 * 1000

/** A signed-in admin whose session has not confirmed the password. */
const unconfirmedAdmin = () => signedInClient(t, { isAdmin: true, verified: true })

/** A signed-in admin who confirmed the password just now. */
const admin = async () => {
  const signedIn = await unconfirmedAdmin()
  await confirmPassword(signedIn.client, signedIn.password)
  return signedIn
}

const auditRows = (userId: number) =>
  t.database.db
    .select()
    .from(adminAuditRecords)
    .where(eq(adminAuditRecords.subjectUserId, userId))
    .orderBy(adminAuditRecords.id)

const ledgerRows = (userId: number) =>
  t.database.db.select().from(creditTransactions).where(eq(creditTransactions.userId, userId))

/** The database's refusal of a statement, as the driver reports it (drizzle wraps it as its cause). */
async function refusalOf(statement: Promise<unknown>): Promise<{ code?: string; message: string }> {
  const error = await statement.then(
    () => null,
    (e: unknown) => e as { code?: string; message: string; cause?: { code?: string; message: string } },
  )
  if (!error) throw new Error('the statement was not refused')
  return error.cause ?? error
}

describe('password confirmation', () => {
  it.each([
    ['adjust', { amount: 25, reason: 'Goodwill' }],
    ['package', { package_id: 'pro', reason: 'Upgrade' }],
    ['adjust', { amount: 'garbage' }],
    ['package', {}],
  ])(
    'POST .../billing/%s answers 423 without a recent one (before the body is judged), and changes nothing',
    async (change, body) => {
      const { client } = await unconfirmedAdmin()
      const { user } = await createUser(t.database.db)
      await grantCredits(t.database.db, user.id, 10)
      const res = await client.post(`${billingPath(user.id)}/${change}`, body)
      expect(res).toMatchObject({ status: 423, data: { message: 'Password confirmation required.' } })
      expect(await ledgerRows(user.id)).toHaveLength(1)
      expect(await auditRows(user.id)).toEqual([])
      const billing = (await client.get(billingPath(user.id))).data
      expect(billing).toMatchObject({ available_credits: 10, current_package: null, audit: [] })
    },
  )

  it('goes through once confirmed, and answers 423 again after PASSWORD_TIMEOUT', async () => {
    const { client, password } = await unconfirmedAdmin()
    const { user } = await createUser(t.database.db)
    const adjust = () => client.post(`${billingPath(user.id)}/adjust`, { amount: 1, reason: 'Test' })
    expect((await adjust()).status).toBe(423)
    await confirmPassword(client, password)
    expect((await adjust()).status).toBe(200)
    // Kept alive within the session's 120-minute idle lifetime, past the 3 hours.
    t.clock.advance(PASSWORD_TIMEOUT_MS / 2)
    expect((await client.get(billingPath(user.id))).status).toBe(200)
    t.clock.advance(PASSWORD_TIMEOUT_MS / 2)
    expect((await adjust()).status).toBe(423)
    expect(
      (await client.post(`${billingPath(user.id)}/package`, { package_id: 'pro', reason: 'Test' })).status,
    ).toBe(423)
    expect(await auditRows(user.id)).toHaveLength(1)
  })
})

describe('reason', () => {
  it.each([
    ['no reason', { package_id: 'pro' }, fieldError('reason', 'The reason field is required.')],
    [
      'an empty reason',
      { package_id: 'pro', reason: '' },
      fieldError('reason', 'The reason field is required.'),
    ],
    [
      'a reason over 1000 characters',
      { package_id: 'pro', reason: 'r'.repeat(1001) },
      fieldError('reason', 'The reason field must not be greater than 1000 characters.'),
    ],
  ])('a package grant with %s is a 422 on reason, granting nothing', async (_label, body, expected) => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    const res = await client.post(`${billingPath(user.id)}/package`, body)
    expect(res).toMatchObject({ status: 422, data: expected })
    expect(await ledgerRows(user.id)).toEqual([])
    expect(await auditRows(user.id)).toEqual([])
  })
})

describe('the audit record', () => {
  it('an adjustment writes exactly one: the admin, the user, the reason, the account before and after, the address', async () => {
    const { client, user: adminUser } = await admin()
    const owner = await signedInClient(t)
    const userId = owner.user.id
    await grantCredits(t.database.db, userId, 10)
    expect(
      (await owner.client.post('/api/credit-holds', { broker_parent_order_id: 'p-1', credits_amount: 4 }))
        .status,
    ).toBe(201)

    const res = await client.post(`${billingPath(userId)}/adjust`, { amount: -2.5, reason: 'Chargeback #7' })
    expect(res.status).toBe(200)
    const record = {
      id: expect.any(Number),
      action: 'billing.adjust',
      admin_id: adminUser.id,
      admin_email: adminUser.email,
      user_id: userId,
      reason: 'Chargeback #7',
      before: { available_credits: 10, held_credits: 4, current_package_id: null },
      after: { available_credits: 7.5, held_credits: 4, current_package_id: null, amount: -2.5 },
      ip_address: expect.stringMatching(LOOPBACK),
      created_at: expect.stringMatching(DATE),
    }
    expect(res.data.audit).toEqual([record])
    expect((await client.get(billingPath(userId))).data.audit).toEqual([record])

    const stored = await auditRows(userId)
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({
      adminId: adminUser.id,
      adminEmail: adminUser.email,
      subjectUserId: userId,
      action: 'billing.adjust',
      reason: 'Chargeback #7',
      ipAddress: expect.stringMatching(LOOPBACK),
    })
    expect(stored[0]?.createdAt.getTime()).toBe(t.clock.now().getTime())
  })

  it('a package grant writes one with the package and its credits, and the current package before and after', async () => {
    const { client, user: adminUser } = await admin()
    const { user } = await createUser(t.database.db)
    await grantCredits(t.database.db, user.id, 5)
    const first = await client.post(`${billingPath(user.id)}/package`, {
      package_id: 'starter',
      reason: 'Trial',
    })
    expect(first.status).toBe(200)
    const res = await client.post(`${billingPath(user.id)}/package`, { package_id: 'pro', reason: 'Upgrade' })
    expect(res.status).toBe(200)
    const creditsOf = (id: string) =>
      (res.data.transactions as { reference: string; amount: number }[]).find((row) => row.reference === id)
        ?.amount
    const starter = creditsOf('starter') as number
    expect(res.data.audit).toEqual([
      expect.objectContaining({
        action: 'billing.package',
        admin_id: adminUser.id,
        admin_email: adminUser.email,
        user_id: user.id,
        reason: 'Upgrade',
        before: { available_credits: 5 + starter, held_credits: 0, current_package_id: 'starter' },
        after: {
          available_credits: 5 + starter + 600,
          held_credits: 0,
          current_package_id: 'pro',
          package_id: 'pro',
          credits: 600,
        },
        ip_address: expect.stringMatching(LOOPBACK),
      }),
      expect.objectContaining({
        action: 'billing.package',
        reason: 'Trial',
        before: { available_credits: 5, held_credits: 0, current_package_id: null },
      }),
    ])
    expect(await auditRows(user.id)).toHaveLength(2)
  })

  it('a change that fails leaves none: a debit over the spendable credits, an unknown package', async () => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    await grantCredits(t.database.db, user.id, 2)
    const debit = await client.post(`${billingPath(user.id)}/adjust`, { amount: -3, reason: 'Too much' })
    expect(debit).toMatchObject({
      status: 422,
      data: fieldError('amount', 'Insufficient credits: 2 spendable.'),
    })
    const unknown = await client.post(`${billingPath(user.id)}/package`, {
      package_id: 'platinum',
      reason: 'x',
    })
    expect(unknown.status).toBe(422)
    expect(await auditRows(user.id)).toEqual([])
    expect((await client.get(billingPath(user.id))).data.audit).toEqual([])
  })

  it('lists the newest 25, newest first', async () => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    for (let i = 1; i <= 26; i += 1) {
      expect(
        (await client.post(`${billingPath(user.id)}/adjust`, { amount: i, reason: `grant ${i}` })).status,
      ).toBe(200)
    }
    const { audit } = (await client.get(billingPath(user.id))).data
    expect(audit.map((record: { reason: string }) => record.reason)).toEqual(
      Array.from({ length: 25 }, (_, i) => `grant ${26 - i}`),
    )
    expect(await auditRows(user.id)).toHaveLength(26)
  })

  it('cannot be changed or deleted (the table refuses it), and outlives the user it is about', async () => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    expect((await client.post(`${billingPath(user.id)}/adjust`, { amount: 5, reason: 'Kept' })).status).toBe(
      200,
    )
    const [record] = await auditRows(user.id)
    if (!record) throw new Error('no audit record')
    const { db } = t.database

    const update = await refusalOf(
      db.update(adminAuditRecords).set({ reason: 'rewritten' }).where(eq(adminAuditRecords.id, record.id)),
    )
    expect(update.code).toBe('42501')
    expect(update.message).toContain('admin_audit_records is append-only: UPDATE refused')
    const remove = await refusalOf(db.execute(sql`delete from admin_audit_records where id = ${record.id}`))
    expect(remove.code).toBe('42501')
    expect(remove.message).toContain('admin_audit_records is append-only: DELETE refused')
    expect(await auditRows(user.id)).toEqual([record])

    // No route changes a record either: the admin deletes the user, the record stays.
    expect((await client.delete(`/api/users/${user.id}`)).status).toBe(200)
    expect(await db.select().from(users).where(eq(users.id, user.id))).toEqual([])
    expect(
      await db
        .select()
        .from(adminAuditRecords)
        .where(and(eq(adminAuditRecords.subjectUserId, user.id), eq(adminAuditRecords.id, record.id))),
    ).toEqual([record])
  })
})
