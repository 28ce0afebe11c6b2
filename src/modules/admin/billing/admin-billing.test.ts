import { and, eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import {
  confirmPassword,
  createUser,
  grantCredits,
  signedInClient,
} from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import { creditTransactions } from '../../../db/schema/index.ts'
import { systemClock } from '../../../lib/clock.ts'
import { createLedgerService } from '../../credits/ledger.service.ts'

const t = appUnderTest()

const billingPath = (userId: number) => `/api/admin/users/${userId}/billing`
const fieldError = (field: string, message: string) => ({ message, errors: { [field]: [message] } })
const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

/** The ledger rows of a user as stored, oldest first (admin_id is not on the wire). */
const storedRows = (userId: number, kind: string) =>
  t.database.db
    .select()
    .from(creditTransactions)
    .where(and(eq(creditTransactions.userId, userId), eq(creditTransactions.kind, kind)))
    .orderBy(creditTransactions.id)

/** A signed-in admin who confirmed the password on this session just now, as the changes need. */
const admin = async () => {
  const signedIn = await signedInClient(t, { isAdmin: true, verified: true })
  await confirmPassword(signedIn.client, signedIn.password)
  return signedIn
}

describe('access', () => {
  it('answers 403 to a signed-in user who is not an admin, and changes nothing', async () => {
    const { client, user } = await signedInClient(t, { verified: true })
    const forbidden = { message: 'This action is unauthorized.' }
    expect(await client.get(billingPath(user.id))).toMatchObject({ status: 403, data: forbidden })
    const adjust = await client.post(`${billingPath(user.id)}/adjust`, {
      amount: 100,
      reason: 'self-service',
    })
    expect(adjust).toMatchObject({ status: 403, data: forbidden })
    const pkg = await client.post(`${billingPath(user.id)}/package`, { package_id: 'desk', reason: 'x' })
    expect(pkg).toMatchObject({ status: 403, data: forbidden })
    expect((await client.get('/api/credits')).data.available_credits).toBe(0)
  })

  it('answers 404 {message} for a user id that names nobody', async () => {
    const { client } = await admin()
    const missing = 987_654_321
    const message = { message: `No query results for model [App\\Models\\User] ${missing}` }
    expect(await client.get(billingPath(missing))).toMatchObject({ status: 404, data: message })
    const adjust = await client.post(`${billingPath(missing)}/adjust`, { amount: 5, reason: 'x' })
    expect(adjust).toMatchObject({ status: 404, data: message })
    const pkg = await client.post(`${billingPath(missing)}/package`, { package_id: 'pro', reason: 'x' })
    expect(pkg).toMatchObject({ status: 404, data: message })
    expect((await client.get(billingPath(0))).status).toBe(404)
    expect((await client.get('/api/admin/users/abc/billing')).status).toBe(404)
  })
})

describe('GET /api/admin/users/{user}/billing', () => {
  it('answers a new user with no credits, no package and empty lists', async () => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db, { name: 'Nina New' })
    const res = await client.get(billingPath(user.id))
    expect(res.status).toBe(200)
    expect(res.data).toEqual({
      user: { id: user.id, name: 'Nina New', email: user.email },
      available_credits: 0,
      held_credits: 0,
      credits_available_for_automation: 0,
      current_package: null,
      holds: [],
      transactions: [],
      used_features: [],
      audit: [],
    })
  })

  it("shows the user's holds, newest ledger rows and used features (the feature_use rows, by feature)", async () => {
    const { client } = await admin()
    const owner = await signedInClient(t)
    const userId = owner.user.id
    await grantCredits(t.database.db, userId, 20)
    const hold = await owner.client.post('/api/credit-holds', {
      broker_parent_order_id: 'parent-1',
      credits_amount: 4,
    })
    expect(hold.status).toBe(201)
    const ledger = createLedgerService({ db: t.database.db, clock: systemClock })
    for (const [reference, amount] of [
      ['ai_assistant', '-0.5'],
      ['ai_assistant', '-0.5'],
      ['retired_feature', '-3'],
      ['ai_analysis', '-2'],
    ] as const) {
      await ledger.withLockedAccount(userId, (tx) =>
        ledger.append(tx, { userId, amount, kind: 'feature_use', reference }),
      )
    }

    const res = await client.get(billingPath(userId))
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      available_credits: 14,
      held_credits: 4,
      credits_available_for_automation: 10,
      current_package: null,
    })
    expect(res.data.holds).toEqual([
      expect.objectContaining({
        id: hold.data.id,
        broker_parent_order_id: 'parent-1',
        status: 'held',
        credits_amount: 4,
      }),
    ])
    expect(
      res.data.transactions.map((row: { kind: string; amount: number }) => [row.kind, row.amount]),
    ).toEqual([
      ['feature_use', -2],
      ['feature_use', -3],
      ['feature_use', -0.5],
      ['feature_use', -0.5],
      ['admin_adjustment', 20],
    ])
    expect(res.data.used_features).toEqual([
      {
        feature_id: 'ai_assistant',
        name: 'AI assistant answer',
        uses: 2,
        credits: 1,
        last_used_at: expect.stringMatching(DATE),
      },
      {
        feature_id: 'ai_analysis',
        name: 'AI market analysis',
        uses: 1,
        credits: 2,
        last_used_at: expect.stringMatching(DATE),
      },
      {
        feature_id: 'retired_feature',
        name: null,
        uses: 1,
        credits: 3,
        last_used_at: expect.stringMatching(DATE),
      },
    ])
  })
})

describe('used_features: automated orders', () => {
  it('counts each captured hold as an automated_order use, with the credits it captured; a released hold is no use', async () => {
    const { client } = await admin()
    const owner = await signedInClient(t, { credits: 10 })
    for (const [order, amount] of [
      ['auto-1', undefined],
      ['auto-2', 2.5],
      ['auto-3', 1],
    ] as const) {
      const hold = await owner.client.post('/api/credit-holds', {
        broker_parent_order_id: order,
        ...(amount === undefined ? {} : { credits_amount: amount }),
      })
      expect(hold.status).toBe(201)
    }
    for (const order of ['auto-1', 'auto-2']) {
      const captured = await owner.client.post('/api/credit-holds/capture', { broker_parent_order_id: order })
      expect(captured.status).toBe(200)
    }
    expect(
      (await owner.client.post('/api/credit-holds/release', { broker_parent_order_id: 'auto-3' })).status,
    ).toBe(200)
    const res = await client.get(billingPath(owner.user.id))
    expect(res.status).toBe(200)
    // The first hold took HOLD_DEFAULT_CREDITS (1), the catalogue's automated_order cost.
    expect(res.data.used_features).toEqual([
      {
        feature_id: 'automated_order',
        name: 'Automated order',
        uses: 2,
        credits: 3.5,
        last_used_at: expect.stringMatching(DATE),
      },
    ])
  })
})

describe('POST /api/admin/users/{user}/billing/adjust', () => {
  it("adds credits as an admin_adjustment row carrying the admin's id and the reason", async () => {
    const { client, user: adminUser } = await admin()
    const { user } = await createUser(t.database.db)
    const res = await client.post(`${billingPath(user.id)}/adjust`, { amount: 25.5, reason: 'Goodwill' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ available_credits: 25.5, credits_available_for_automation: 25.5 })
    expect(res.data.transactions).toEqual([
      {
        id: expect.any(Number),
        kind: 'admin_adjustment',
        amount: 25.5,
        balance_after: 25.5,
        reference: null,
        reason: 'Goodwill',
        created_at: expect.stringMatching(DATE),
        purchase: null,
      },
    ])
    const [row] = await storedRows(user.id, 'admin_adjustment')
    expect(row).toMatchObject({ adminId: adminUser.id, amount: '25.5000', reason: 'Goodwill' })
    // The user sees it too.
    expect((await client.get(billingPath(user.id))).data).toEqual(res.data)
  })

  it('takes credits with a negative amount, down to exactly zero spendable', async () => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    await grantCredits(t.database.db, user.id, '10.25')
    const res = await client.post(`${billingPath(user.id)}/adjust`, { amount: -10.25, reason: 'Chargeback' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ available_credits: 0, credits_available_for_automation: 0 })
    expect(res.data.transactions[0]).toMatchObject({
      kind: 'admin_adjustment',
      amount: -10.25,
      balance_after: 0,
    })
  })

  it('refuses a debit below the spendable credits (balance minus holds) with a 422 on amount, changing nothing', async () => {
    const { client } = await admin()
    const owner = await signedInClient(t)
    await grantCredits(t.database.db, owner.user.id, 10)
    await owner.client.post('/api/credit-holds', { broker_parent_order_id: 'p-1', credits_amount: 8 })
    const before = (await client.get(billingPath(owner.user.id))).data
    expect(before).toMatchObject({
      available_credits: 10,
      held_credits: 8,
      credits_available_for_automation: 2,
    })

    const res = await client.post(`${billingPath(owner.user.id)}/adjust`, { amount: -3, reason: 'Too much' })
    expect(res.status).toBe(422)
    expect(res.data).toEqual(fieldError('amount', 'Insufficient credits: 2 spendable.'))
    expect((await client.get(billingPath(owner.user.id))).data).toEqual(before)
    expect(
      (await client.post(`${billingPath(owner.user.id)}/adjust`, { amount: -2, reason: 'Fits' })).status,
    ).toBe(200)
  })

  it.each([
    ['no amount', { reason: 'x' }, fieldError('amount', 'The amount field is required.')],
    ['no reason', { amount: 5 }, fieldError('reason', 'The reason field is required.')],
    ['an empty reason', { amount: 5, reason: '' }, fieldError('reason', 'The reason field is required.')],
    ['a zero amount', { amount: 0, reason: 'x' }, fieldError('amount', 'The amount field must not be zero.')],
    [
      '5 decimals',
      { amount: 1.23456, reason: 'x' },
      fieldError('amount', 'The amount field must have 0-4 decimal places.'),
    ],
    [
      'a word for an amount',
      { amount: 'lots', reason: 'x' },
      fieldError('amount', 'The amount field must be a number.'),
    ],
    [
      'an amount over a trillion',
      { amount: 1e13, reason: 'x' },
      fieldError('amount', 'The amount field must not be greater than 1000000000000.'),
    ],
    [
      'a reason over 1000 characters',
      { amount: 5, reason: 'r'.repeat(1001) },
      fieldError('reason', 'The reason field must not be greater than 1000 characters.'),
    ],
  ])('refuses %s with a 422 and writes nothing', async (_label, body, expected) => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    const res = await client.post(`${billingPath(user.id)}/adjust`, body)
    expect(res.status).toBe(422)
    expect(res.data).toEqual(expected)
    expect((await client.get(billingPath(user.id))).data.transactions).toEqual([])
  })
})

describe('POST /api/admin/users/{user}/billing/package', () => {
  it("grants the package's credits as a package row with the admin's id, and makes it the current package", async () => {
    const { client, user: adminUser } = await admin()
    const { user } = await createUser(t.database.db)
    await grantCredits(t.database.db, user.id, 5)
    const res = await client.post(`${billingPath(user.id)}/package`, { package_id: 'pro', reason: 'Upgrade' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({
      available_credits: 605,
      current_package: { id: 'pro', name: 'Pro', credits: 600, price: 49, currency: 'usd' },
    })
    expect(res.data.transactions[0]).toMatchObject({
      kind: 'package',
      amount: 600,
      balance_after: 605,
      reference: 'pro',
    })
    const [row] = await storedRows(user.id, 'package')
    expect(row).toMatchObject({ adminId: adminUser.id, amount: '600.0000', reference: 'pro' })

    // Another grant adds again and replaces the current package.
    const next = await client.post(`${billingPath(user.id)}/package`, {
      package_id: 'starter',
      reason: 'Downgrade',
    })
    expect(next.data).toMatchObject({ available_credits: 705, current_package: { id: 'starter' } })
    expect((await client.get(billingPath(user.id))).data.current_package.id).toBe('starter')
  })

  it('refuses an unknown package with a 422 on package_id, and grants nothing', async () => {
    const { client } = await admin()
    const { user } = await createUser(t.database.db)
    for (const packageId of ['platinum', 'PRO', ' ']) {
      const res = await client.post(`${billingPath(user.id)}/package`, { package_id: packageId, reason: 'x' })
      expect(res.status, packageId).toBe(422)
      expect(Object.keys(res.data.errors)).toEqual(['package_id'])
    }
    const res = await client.post(`${billingPath(user.id)}/package`, { package_id: 'platinum', reason: 'x' })
    expect(res.data).toEqual(fieldError('package_id', 'The selected package id is invalid.'))
    expect((await client.get(billingPath(user.id))).data).toMatchObject({
      available_credits: 0,
      current_package: null,
    })
  })
})
