import { describe, expect, it } from 'vitest'
import { TestClient } from '../../../test/helpers/client.ts'
import { grantCredits, signedInClient } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { ValidationError } from '../../lib/errors.ts'
import { laravelDate } from '../../lib/laravel.ts'
import { loadBillingCatalog } from './billing.catalog.ts'
import { createLedgerService } from './ledger.service.ts'

const t = appUnderTest()

const credits = (available: number, held: number, automation: number) => ({
  available_credits: available,
  held_credits: held,
  credits_available_for_automation: automation,
})

describe('GET /api/credits', () => {
  it('answers 401 to a guest', async () => {
    const res = await new TestClient(t.baseUrl).get('/api/credits')
    expect(res).toMatchObject({ status: 401, data: { message: 'Unauthenticated.' } })
  })

  it('a new user has no credits; the packages are those of config/billing.json', async () => {
    const { client } = await signedInClient(t)
    const res = await client.get('/api/credits')
    expect(res.status).toBe(200)
    const packages = loadBillingCatalog().packages
    expect(packages.length).toBeGreaterThan(0)
    expect(res.data).toEqual({ ...credits(0, 0, 0), packages })
    expect(Object.keys(res.data.packages[0])).toEqual(['id', 'name', 'credits', 'price', 'currency'])
  })

  it('follows the ledger and the holds', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, '10.25')
    await client.post('/api/credit-holds', { broker_parent_order_id: 'G1', credits_amount: 3 })
    expect((await client.get('/api/credits')).data).toMatchObject(credits(10.25, 3, 7.25))
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'G1' })
    expect((await client.get('/api/credits')).data).toMatchObject(credits(7.25, 0, 7.25))
  })
})

describe('the credit fields of the user object', () => {
  it('registration answers them, all 0', async () => {
    const client = new TestClient(t.baseUrl)
    const res = await client.post('/api/register', {
      name: 'New Trader',
      email: `new-${Date.now()}@example.com`,
      password: 'long enough secret',
      password_confirmation: 'long enough secret',
    })
    expect(res.status).toBe(201)
    expect(res.data).toMatchObject(credits(0, 0, 0))
  })

  it('GET /api/user: a hold lowers credits_available_for_automation only; a capture lowers available_credits with one hold_capture row', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 20)
    expect((await client.get('/api/user')).data).toMatchObject(credits(20, 0, 20))

    await client.post('/api/credit-holds', { broker_parent_order_id: 'U1', credits_amount: 5.5 })
    await client.post('/api/credit-holds', { broker_parent_order_id: 'U2', credits_amount: 2 })
    expect((await client.get('/api/user')).data).toMatchObject(credits(20, 7.5, 12.5))

    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'U1' })
    expect((await client.get('/api/user')).data).toMatchObject(credits(14.5, 2, 12.5))
    const history = (await client.get('/api/transaction-history')).data.data
    expect(history.filter((row: { kind: string }) => row.kind === 'hold_capture')).toEqual([
      {
        id: expect.any(Number),
        kind: 'hold_capture',
        amount: -5.5,
        balance_after: 14.5,
        reference: 'U1',
        reason: null,
        created_at: laravelDate(t.clock.now()),
        purchase: null,
      },
    ])

    await client.post('/api/credit-holds/release', { broker_parent_order_id: 'U2' })
    expect((await client.get('/api/user')).data).toMatchObject(credits(14.5, 0, 14.5))
  })
})

describe('the credit fields on the other answers carrying the user', () => {
  it('a profile update answers the real credits too', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 4)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'PR1', credits_amount: 1 })
    const res = await client.put('/api/user-profile/profile-information', {
      name: 'Renamed',
      email: user.email,
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ name: 'Renamed', ...credits(4, 1, 3) })
  })
})

describe('GET /api/transaction-history', () => {
  const path = () => `${t.config.appUrl}/api/transaction-history`

  it('answers the ledger newest first as a paginator, each row with its running balance', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 5)
    await grantCredits(t.database.db, user.id, '0.1234')
    await client.post('/api/credit-holds', { broker_parent_order_id: 'H1', credits_amount: 1.1 })
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'H1' })
    const res = await client.get('/api/transaction-history')
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ current_page: 1, per_page: 25, total: 3, from: 1, to: 3, path: path() })
    expect(
      res.data.data.map(
        (row: { kind: string; amount: number; balance_after: number; reason: string | null }) => [
          row.kind,
          row.amount,
          row.balance_after,
          row.reason,
        ],
      ),
    ).toEqual([
      ['hold_capture', -1.1, 4.0234, null],
      ['admin_adjustment', 0.1234, 5.1234, 'test grant'],
      ['admin_adjustment', 5, 5, 'test grant'],
    ])
  })

  it("shows only the user's own rows", async () => {
    const ada = await signedInClient(t)
    const bob = await signedInClient(t)
    await grantCredits(t.database.db, ada.user.id, 7)
    expect((await bob.client.get('/api/transaction-history')).data).toMatchObject({ total: 0, data: [] })
    expect((await ada.client.get('/api/transaction-history')).data.total).toBe(1)
  })

  it("writes Laravel's link window with the gap entries (no page key) past 13 pages", async () => {
    const { client, user } = await signedInClient(t)
    for (let i = 0; i < 15; i++) await grantCredits(t.database.db, user.id, 1)
    const res = await client.get('/api/transaction-history?per_page=1&page=8')
    expect(res.data).toMatchObject({ current_page: 8, last_page: 15, from: 8, to: 8, total: 15 })
    expect(res.data.data[0].balance_after).toBe(8)
    const url = (n: number) => `${path()}?per_page=1&page=${n}`
    const page = (n: number, active = false) => ({ url: url(n), label: String(n), page: n, active })
    const gap = { url: null, label: '...', active: false }
    expect(res.data.links).toEqual([
      { url: url(7), label: '&laquo; Previous', page: 7, active: false },
      page(1),
      page(2),
      gap,
      page(5),
      page(6),
      page(7),
      page(8, true),
      page(9),
      page(10),
      page(11),
      gap,
      page(14),
      page(15),
      { url: url(9), label: 'Next &raquo;', page: 9, active: false },
    ])
    // Byte order too: url, label, page, active; the gap has no page at all.
    expect(res.text).toContain('{"url":null,"label":"...","active":false}')
    expect(res.text).toContain(`{"url":"${url(8)}","label":"8","page":8,"active":true}`)
  })

  it.each([
    ['per_page=0', 'per_page', 'The per page field must be at least 1.'],
    ['per_page=51', 'per_page', 'The per page field must not be greater than 50.'],
    ['page=-1', 'page', 'The page field must be at least 1.'],
  ])('refuses %s with a 422', async (query, field, message) => {
    const { client } = await signedInClient(t)
    const res = await client.get(`/api/transaction-history?${query}`)
    expect(res).toMatchObject({ status: 422, data: { message, errors: { [field]: [message] } } })
  })
})

describe('the ledger service', () => {
  it('refuses a debit below the spendable credits with a 422 on the given field, changing nothing', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 3)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'S1', credits_amount: 2 })
    const ledger = createLedgerService({ db: t.database.db, clock: t.clock })
    const debit = (amount: string) =>
      ledger.withLockedAccount(user.id, (tx) =>
        ledger.append(tx, { userId: user.id, amount, kind: 'admin_adjustment' }, 'cost'),
      )
    const refused = await debit('-1.0001').catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(ValidationError)
    expect((refused as ValidationError).errors).toEqual({ cost: ['Insufficient credits: 1 spendable.'] })
    expect((await client.get('/api/user')).data).toMatchObject(credits(3, 2, 1))

    const row = await debit('-1')
    expect(row).toMatchObject({ amount: '-1.0000', balanceAfter: '2.0000', kind: 'admin_adjustment' })
    expect((await client.get('/api/user')).data).toMatchObject(credits(2, 2, 0))
  })

  it('writes a delivered AI answer (feature_use) and the reversals whatever is left, below zero', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 1)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'S2', credits_amount: 1 })
    const ledger = createLedgerService({ db: t.database.db, clock: t.clock })
    const row = await ledger.withLockedAccount(user.id, (tx) =>
      ledger.append(tx, { userId: user.id, amount: '-1', kind: 'feature_use' }),
    )
    expect(row).toMatchObject({ amount: '-1.0000', balanceAfter: '0.0000' })
    expect((await client.get('/api/user')).data).toMatchObject(credits(0, 1, -1))
    const below = await ledger.withLockedAccount(user.id, (tx) =>
      ledger.append(tx, { userId: user.id, amount: '-0.5', kind: 'feature_use' }),
    )
    expect(below).toMatchObject({ balanceAfter: '-0.5000' })
  })

  it('refuses a zero or over-precise amount', async () => {
    const { user } = await signedInClient(t)
    const ledger = createLedgerService({ db: t.database.db, clock: t.clock })
    for (const amount of ['0', '0.0000', '1.00001', 'abc', '1e3']) {
      const error = await ledger
        .withLockedAccount(user.id, (tx) => ledger.append(tx, { userId: user.id, amount, kind: 'package' }))
        .catch((e: unknown) => e)
      expect(error, amount).toBeInstanceOf(ValidationError)
    }
    expect(await ledger.summary(user.id)).toEqual(credits(0, 0, 0))
  })
})
