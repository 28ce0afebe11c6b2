import { and, asc, eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../../../../test/helpers/build-test-app.ts'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { TestClient as Client } from '../../../../test/helpers/client.ts'
import { grantCredits, signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import { creditHolds, creditTransactions } from '../../../db/schema/index.ts'
import { laravelDate } from '../../../lib/laravel.ts'

const t = appUnderTest()

/** A signed-in user holding `credits` in the ledger. */
async function userWith(credits: number | string) {
  const signedIn = await signedInClient(t)
  if (Number(credits) !== 0) await grantCredits(t.database.db, signedIn.user.id, credits)
  return signedIn
}

const summaryOf = async (client: TestClient) => {
  const { data } = await client.get('/api/user')
  return {
    available: data.available_credits,
    held: data.held_credits,
    automation: data.credits_available_for_automation,
  }
}

const ledgerRows = (userId: number) =>
  t.database.db
    .select()
    .from(creditTransactions)
    .where(eq(creditTransactions.userId, userId))
    .orderBy(asc(creditTransactions.id))

const captureRows = (userId: number) =>
  t.database.db
    .select()
    .from(creditTransactions)
    .where(and(eq(creditTransactions.userId, userId), eq(creditTransactions.kind, 'hold_capture')))

const holdsOf = (userId: number) =>
  t.database.db.select().from(creditHolds).where(eq(creditHolds.userId, userId)).orderBy(asc(creditHolds.id))

const unprocessable = (field: string, message: string) => ({ message, errors: { [field]: [message] } })

describe('POST /api/credit-holds', () => {
  it('answers 401 to a guest and 419 without the CSRF token', async () => {
    const guest = new Client(t.baseUrl)
    expect(await guest.post('/api/credit-holds', { broker_parent_order_id: 'A' })).toMatchObject({
      status: 401,
    })
    const { client, user } = await userWith(5)
    const res = await client.post('/api/credit-holds', { broker_parent_order_id: 'A' }, { withoutCsrf: true })
    expect(res).toMatchObject({ status: 419, data: { message: 'CSRF token mismatch.' } })
    expect(await holdsOf(user.id)).toEqual([])
  })

  it('none -> held: 201 with the hold; held credits go up, available credits stay', async () => {
    const { client } = await userWith(10)
    const res = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'PO-1',
      broker_account_hash: 'acct-hash-1',
      credits_amount: 2.5,
    })
    expect(res.status).toBe(201)
    const now = laravelDate(t.clock.now())
    expect(res.data).toEqual({
      id: expect.any(Number),
      status: 'held',
      broker_parent_order_id: 'PO-1',
      broker_account_hash: 'acct-hash-1',
      credits_amount: 2.5,
      transferred_from: null,
      captured_at: null,
      released_at: null,
      created_at: now,
      updated_at: now,
    })
    expect(await summaryOf(client)).toEqual({ available: 10, held: 2.5, automation: 7.5 })
  })

  it('without credits_amount holds HOLD_DEFAULT_CREDITS, 1 by default', async () => {
    const { client } = await userWith(5)
    const first = await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-default' })
    expect(first).toMatchObject({ status: 201, data: { credits_amount: 1, broker_account_hash: null } })
    expect(await summaryOf(client)).toEqual({ available: 5, held: 1, automation: 4 })
  })

  it('held -> held: the same order again answers 200 with the existing hold and reserves nothing', async () => {
    const { client, user } = await userWith(10)
    const created = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'PO-2',
      credits_amount: 3,
    })
    const again = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'PO-2',
      broker_account_hash: 'other',
      credits_amount: 4,
    })
    expect(again.status).toBe(200)
    expect(again.data).toEqual(created.data)
    expect(await summaryOf(client)).toEqual({ available: 10, held: 3, automation: 7 })
    expect(await holdsOf(user.id)).toHaveLength(1)
  })

  it('insufficient spendable credits: 422 on credits_amount, no hold, nothing reserved', async () => {
    const { client, user } = await userWith(5)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-3a', credits_amount: 3 })
    const res = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'PO-3b',
      credits_amount: 2.0001,
    })
    expect(res.status).toBe(422)
    expect(res.data).toEqual(unprocessable('credits_amount', 'Insufficient credits: 2 spendable.'))
    expect(await summaryOf(client)).toEqual({ available: 5, held: 3, automation: 2 })
    expect((await holdsOf(user.id)).map((h) => h.brokerParentOrderId)).toEqual(['PO-3a'])

    // Exactly the spendable credits is enough, and leaves nothing for the default hold.
    const exact = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'PO-3b',
      credits_amount: 2,
    })
    expect(exact.status).toBe(201)
    const none = await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-3c' })
    expect(none).toMatchObject({
      status: 422,
      data: unprocessable('credits_amount', 'Insufficient credits: 0 spendable.'),
    })
  })

  it('a user with no credits at all gets the 422', async () => {
    const { client, user } = await userWith(0)
    const res = await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-poor' })
    expect(res).toMatchObject({
      status: 422,
      data: unprocessable('credits_amount', 'Insufficient credits: 0 spendable.'),
    })
    expect(await holdsOf(user.id)).toEqual([])
  })

  it('adds decimals exactly: 0.1 + 0.2 fills a balance of 0.3 to the last 0.0001', async () => {
    const { client } = await userWith('0.3')
    expect(
      (await client.post('/api/credit-holds', { broker_parent_order_id: 'D1', credits_amount: 0.1 })).status,
    ).toBe(201)
    expect(
      (await client.post('/api/credit-holds', { broker_parent_order_id: 'D2', credits_amount: 0.2 })).status,
    ).toBe(201)
    expect(await summaryOf(client)).toEqual({ available: 0.3, held: 0.3, automation: 0 })
    const over = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'D3',
      credits_amount: 0.0001,
    })
    expect(over.status).toBe(422)
  })

  it('captured or released -> 200 with that row, nothing reserved (even beyond the spendable credits)', async () => {
    const { client } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-cap', credits_amount: 4 })
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'PO-cap' })
    await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-rel', credits_amount: 5 })
    await client.post('/api/credit-holds/release', { broker_parent_order_id: 'PO-rel' })
    await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-fill', credits_amount: 6 })
    expect(await summaryOf(client)).toEqual({ available: 6, held: 6, automation: 0 })

    const captured = await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-cap' })
    expect(captured).toMatchObject({ status: 200, data: { status: 'captured', credits_amount: 4 } })
    expect(captured.data.captured_at).toBe(laravelDate(t.clock.now()))
    const released = await client.post('/api/credit-holds', { broker_parent_order_id: 'PO-rel' })
    expect(released).toMatchObject({ status: 200, data: { status: 'released', credits_amount: 5 } })
    expect(released.data.released_at).toBe(laravelDate(t.clock.now()))
    expect(await summaryOf(client)).toEqual({ available: 6, held: 6, automation: 0 })
  })

  it.each([
    ['no order id', {}, 'broker_parent_order_id', 'The broker parent order id field is required.'],
    [
      'an empty order id',
      { broker_parent_order_id: '' },
      'broker_parent_order_id',
      'The broker parent order id field is required.',
    ],
    [
      'a blank order id',
      { broker_parent_order_id: '   ' },
      'broker_parent_order_id',
      'The broker parent order id field is required.',
    ],
    [
      'an order id of 192 characters',
      { broker_parent_order_id: 'x'.repeat(192) },
      'broker_parent_order_id',
      'The broker parent order id field must not be greater than 191 characters.',
    ],
    [
      'an object as order id',
      { broker_parent_order_id: { a: 1 } },
      'broker_parent_order_id',
      'The broker parent order id field must be a string.',
    ],
    [
      'an account hash of 192 characters',
      { broker_parent_order_id: 'V', broker_account_hash: 'h'.repeat(192) },
      'broker_account_hash',
      'The broker account hash field must not be greater than 191 characters.',
    ],
    [
      '0 credits',
      { broker_parent_order_id: 'V', credits_amount: 0 },
      'credits_amount',
      'The credits amount field must be greater than 0.',
    ],
    [
      'negative credits',
      { broker_parent_order_id: 'V', credits_amount: -1 },
      'credits_amount',
      'The credits amount field must be greater than 0.',
    ],
    [
      'text as credits',
      { broker_parent_order_id: 'V', credits_amount: 'lots' },
      'credits_amount',
      'The credits amount field must be a number.',
    ],
    [
      'false as credits',
      { broker_parent_order_id: 'V', credits_amount: false },
      'credits_amount',
      // Laravel's `numeric` refuses a boolean; it was read as 0 while JSON values were coerced.
      'The credits amount field must be a number.',
    ],
    [
      'five decimals',
      { broker_parent_order_id: 'V', credits_amount: 1.00001 },
      'credits_amount',
      'The credits amount field must have 0-4 decimal places.',
    ],
    [
      'a tiny amount written with an exponent',
      { broker_parent_order_id: 'V', credits_amount: 1e-7 },
      'credits_amount',
      'The credits amount field must have 0-4 decimal places.',
    ],
    [
      'more than a trillion credits',
      { broker_parent_order_id: 'V', credits_amount: 1e13 },
      'credits_amount',
      'The credits amount field must not be greater than 1000000000000.',
    ],
  ])('refuses %s with a 422 and changes nothing', async (_label, body, field, message) => {
    const { client, user } = await userWith(100)
    const res = await client.post('/api/credit-holds', body)
    expect(res.status).toBe(422)
    expect(res.data.errors[field]).toEqual([message])
    expect(await holdsOf(user.id)).toEqual([])
    expect(await summaryOf(client)).toEqual({ available: 100, held: 0, automation: 100 })
  })

  it('accepts a numeric string (form posts), as Laravel does', async () => {
    const { client } = await userWith(10)
    const res = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'S',
      credits_amount: '1.25',
    })
    expect(res).toMatchObject({ status: 201, data: { credits_amount: 1.25 } })
  })
})

describe('HOLD_DEFAULT_CREDITS', () => {
  it('sets the amount of a hold whose request names none', async () => {
    const other = await buildTestApp({ env: { HOLD_DEFAULT_CREDITS: '2.5' } })
    try {
      const { client, user } = await signedInClient(other)
      await grantCredits(other.database.db, user.id, 3)
      const res = await client.post('/api/credit-holds', { broker_parent_order_id: 'X' })
      expect(res).toMatchObject({ status: 201, data: { credits_amount: 2.5 } })
      const next = await client.post('/api/credit-holds', { broker_parent_order_id: 'Y' })
      expect(next.data).toEqual(unprocessable('credits_amount', 'Insufficient credits: 0.5 spendable.'))
    } finally {
      await other.close()
    }
  })
})

describe('POST /api/credit-holds/capture', () => {
  it('held -> captured: {captured: true}, available credits go down with exactly one hold_capture row', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'C1', credits_amount: 2.5 })
    const res = await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'C1' })
    expect(res).toMatchObject({ status: 200, data: { captured: true } })
    expect(res.data).toEqual({ captured: true })
    expect(await summaryOf(client)).toEqual({ available: 7.5, held: 0, automation: 7.5 })
    const rows = await captureRows(user.id)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ amount: '-2.5000', balanceAfter: '7.5000', reference: 'C1' })
    const [hold] = await holdsOf(user.id)
    expect(hold).toMatchObject({ status: 'captured', capturedAt: t.clock.now(), releasedAt: null })
  })

  it('already captured -> {captured: true} again, and no second debit', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'C2', credits_amount: 3 })
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'C2' })
    t.clock.advance(60_000)
    const again = await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'C2' })
    expect(again.data).toEqual({ captured: true })
    expect(await captureRows(user.id)).toHaveLength(1)
    expect(await summaryOf(client)).toEqual({ available: 7, held: 0, automation: 7 })
  })

  it('released or unknown -> {captured: false}, nothing debited', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'C3', credits_amount: 3 })
    await client.post('/api/credit-holds/release', { broker_parent_order_id: 'C3' })
    expect((await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'C3' })).data).toEqual({
      captured: false,
    })
    expect((await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'nope' })).data).toEqual(
      {
        captured: false,
      },
    )
    expect(await captureRows(user.id)).toEqual([])
    expect((await holdsOf(user.id))[0]?.status).toBe('released')
    expect(await summaryOf(client)).toEqual({ available: 10, held: 0, automation: 10 })
  })

  it('refuses a missing or oversized order id with a 422', async () => {
    const { client } = await userWith(1)
    const missing = await client.post('/api/credit-holds/capture', {})
    expect(missing).toMatchObject({
      status: 422,
      data: unprocessable('broker_parent_order_id', 'The broker parent order id field is required.'),
    })
    const long = await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'x'.repeat(192) })
    expect(long.status).toBe(422)
  })
})

describe('POST /api/credit-holds/release', () => {
  it('held -> released: {released: true}, held credits freed, available credits and the ledger untouched', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'R1', credits_amount: 4 })
    const before = await ledgerRows(user.id)
    const res = await client.post('/api/credit-holds/release', { broker_parent_order_id: 'R1' })
    expect(res).toMatchObject({ status: 200, data: { released: true } })
    expect(res.data).toEqual({ released: true })
    expect(await summaryOf(client)).toEqual({ available: 10, held: 0, automation: 10 })
    expect(await ledgerRows(user.id)).toEqual(before)
    expect((await holdsOf(user.id))[0]).toMatchObject({ status: 'released', releasedAt: t.clock.now() })
  })

  it('already released -> {released: true}, nothing freed twice', async () => {
    const { client } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'R2', credits_amount: 4 })
    await client.post('/api/credit-holds', { broker_parent_order_id: 'R2b', credits_amount: 3 })
    await client.post('/api/credit-holds/release', { broker_parent_order_id: 'R2' })
    const again = await client.post('/api/credit-holds/release', { broker_parent_order_id: 'R2' })
    expect(again.data).toEqual({ released: true })
    expect(await summaryOf(client)).toEqual({ available: 10, held: 3, automation: 7 })
  })

  it('captured or unknown -> {released: false}, and the capture stands', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'R3', credits_amount: 4 })
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'R3' })
    expect((await client.post('/api/credit-holds/release', { broker_parent_order_id: 'R3' })).data).toEqual({
      released: false,
    })
    expect((await client.post('/api/credit-holds/release', { broker_parent_order_id: 'nope' })).data).toEqual(
      {
        released: false,
      },
    )
    expect((await holdsOf(user.id))[0]?.status).toBe('captured')
    expect(await summaryOf(client)).toEqual({ available: 6, held: 0, automation: 6 })
  })
})

describe('POST /api/credit-holds/transfer', () => {
  const transfer = (client: TestClient, from: string, to: string) =>
    client.post('/api/credit-holds/transfer', {
      from_broker_parent_order_id: from,
      to_broker_parent_order_id: to,
    })

  it('moves a held hold to the target order: {transferred: true}; the hold then answers to the new id only', async () => {
    const { client, user } = await userWith(10)
    const created = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'T-A',
      credits_amount: 2,
    })
    t.clock.advance(1000)
    const res = await transfer(client, 'T-A', 'T-B')
    expect(res).toMatchObject({ status: 200, data: { transferred: true } })
    expect(res.data).toEqual({ transferred: true })
    const [hold] = await holdsOf(user.id)
    expect(hold).toMatchObject({
      id: created.data.id,
      brokerParentOrderId: 'T-B',
      transferredFrom: 'T-A',
      status: 'held',
      updatedAt: t.clock.now(),
    })
    expect(await summaryOf(client)).toEqual({ available: 10, held: 2, automation: 8 })
    expect((await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'T-A' })).data).toEqual({
      captured: false,
    })
    expect((await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'T-B' })).data).toEqual({
      captured: true,
    })
    expect(await summaryOf(client)).toEqual({ available: 8, held: 0, automation: 8 })
  })

  it('the same transfer again -> {transferred: true}, nothing changes', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'T-C', credits_amount: 2 })
    await transfer(client, 'T-C', 'T-D')
    const before = await holdsOf(user.id)
    t.clock.advance(1000)
    expect((await transfer(client, 'T-C', 'T-D')).data).toEqual({ transferred: true })
    expect(await holdsOf(user.id)).toEqual(before)
    expect(await summaryOf(client)).toEqual({ available: 10, held: 2, automation: 8 })
  })

  it('another hold already on the target (held or settled) -> 409, both holds unchanged', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'T-E', credits_amount: 1 })
    await client.post('/api/credit-holds', { broker_parent_order_id: 'T-F', credits_amount: 2 })
    await client.post('/api/credit-holds', { broker_parent_order_id: 'T-G', credits_amount: 3 })
    await client.post('/api/credit-holds/release', { broker_parent_order_id: 'T-G' })
    const before = await holdsOf(user.id)
    const onHeld = await transfer(client, 'T-E', 'T-F')
    expect(onHeld.status).toBe(409)
    expect(onHeld.data).toEqual({ message: 'Another hold already uses the target parent order.' })
    expect((await transfer(client, 'T-E', 'T-G')).status).toBe(409)
    expect(await holdsOf(user.id)).toEqual(before)
  })

  it('nothing held on the source (unknown, captured, released) -> {transferred: false}', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'T-cap', credits_amount: 1 })
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'T-cap' })
    await client.post('/api/credit-holds', { broker_parent_order_id: 'T-rel', credits_amount: 1 })
    await client.post('/api/credit-holds/release', { broker_parent_order_id: 'T-rel' })
    const before = await holdsOf(user.id)
    for (const from of ['T-none', 'T-cap', 'T-rel']) {
      expect((await transfer(client, from, `${from}-new`)).data, from).toEqual({ transferred: false })
    }
    expect(await holdsOf(user.id)).toEqual(before)
  })

  it('refuses missing fields and a transfer to the same order with a 422', async () => {
    const { client, user } = await userWith(10)
    await client.post('/api/credit-holds', { broker_parent_order_id: 'T-S', credits_amount: 1 })
    const missing = await client.post('/api/credit-holds/transfer', { from_broker_parent_order_id: 'T-S' })
    expect(missing).toMatchObject({
      status: 422,
      data: unprocessable('to_broker_parent_order_id', 'The to broker parent order id field is required.'),
    })
    const same = await transfer(client, 'T-S', 'T-S')
    expect(same).toMatchObject({
      status: 422,
      data: unprocessable(
        'to_broker_parent_order_id',
        'The to broker parent order id field and from broker parent order id must be different.',
      ),
    })
    expect((await holdsOf(user.id))[0]).toMatchObject({ brokerParentOrderId: 'T-S', transferredFrom: null })
  })
})

describe('GET /api/credit-holds', () => {
  const path = () => `${t.config.appUrl}/api/credit-holds`

  it("answers Laravel's full paginator JSON, empty for a new user", async () => {
    const { client } = await userWith(0)
    const res = await client.get('/api/credit-holds')
    expect(res.status).toBe(200)
    expect(res.text).toBe(
      JSON.stringify({
        current_page: 1,
        data: [],
        first_page_url: `${path()}?page=1`,
        from: null,
        last_page: 1,
        last_page_url: `${path()}?page=1`,
        links: [
          { url: null, label: '&laquo; Previous', page: null, active: false },
          { url: `${path()}?page=1`, label: '1', page: 1, active: true },
          { url: null, label: 'Next &raquo;', page: null, active: false },
        ],
        next_page_url: null,
        path: path(),
        per_page: 25,
        prev_page_url: null,
        to: null,
        total: 0,
      }),
    )
  })

  it('lists newest first, 25 a page by default, with the exact page 2 of 2', async () => {
    const { client } = await userWith(100)
    for (let i = 1; i <= 27; i++) {
      await client.post('/api/credit-holds', { broker_parent_order_id: `L-${i}` })
    }
    const first = await client.get('/api/credit-holds')
    expect(first.data.data).toHaveLength(25)
    expect(first.data.data[0].broker_parent_order_id).toBe('L-27')
    expect(first.data.data[24].broker_parent_order_id).toBe('L-3')
    expect(first.data).toMatchObject({
      from: 1,
      to: 25,
      total: 27,
      last_page: 2,
      next_page_url: `${path()}?page=2`,
    })

    const second = await client.get('/api/credit-holds?page=2')
    expect({
      ...second.data,
      data: second.data.data.map((h: { broker_parent_order_id: string }) => h.broker_parent_order_id),
    }).toEqual({
      current_page: 2,
      data: ['L-2', 'L-1'],
      first_page_url: `${path()}?page=1`,
      from: 26,
      last_page: 2,
      last_page_url: `${path()}?page=2`,
      links: [
        { url: `${path()}?page=1`, label: '&laquo; Previous', page: 1, active: false },
        { url: `${path()}?page=1`, label: '1', page: 1, active: false },
        { url: `${path()}?page=2`, label: '2', page: 2, active: true },
        { url: null, label: 'Next &raquo;', page: null, active: false },
      ],
      next_page_url: null,
      path: path(),
      per_page: 25,
      prev_page_url: `${path()}?page=1`,
      to: 27,
      total: 27,
    })
    // Each item is the same object the create answered.
    const created = await client.post('/api/credit-holds', { broker_parent_order_id: 'L-1' })
    expect(second.data.data[1]).toEqual(created.data)
  })

  it('per_page 1..50 is honoured and kept in the page links; past the last page data is empty', async () => {
    const { client } = await userWith(10)
    for (const id of ['P-1', 'P-2', 'P-3'])
      await client.post('/api/credit-holds', { broker_parent_order_id: id })
    const one = await client.get('/api/credit-holds?per_page=1&page=2')
    expect(one.data).toMatchObject({
      current_page: 2,
      per_page: 1,
      from: 2,
      to: 2,
      last_page: 3,
      total: 3,
      next_page_url: `${path()}?per_page=1&page=3`,
      prev_page_url: `${path()}?per_page=1&page=1`,
    })
    expect(one.data.data.map((h: { broker_parent_order_id: string }) => h.broker_parent_order_id)).toEqual([
      'P-2',
    ])
    const fifty = await client.get('/api/credit-holds?per_page=50')
    expect(fifty.data).toMatchObject({ per_page: 50, total: 3, last_page: 1 })
    const beyond = await client.get('/api/credit-holds?page=9')
    expect(beyond.data).toMatchObject({
      current_page: 9,
      data: [],
      from: null,
      to: null,
      total: 3,
      last_page: 1,
    })
  })

  it.each([
    ['per_page=0', 'per_page', 'The per page field must be at least 1.'],
    ['per_page=51', 'per_page', 'The per page field must not be greater than 50.'],
    ['per_page=abc', 'per_page', 'The per page field must be an integer.'],
    ['per_page=2.5', 'per_page', 'The per page field must be an integer.'],
    ['page=0', 'page', 'The page field must be at least 1.'],
    ['page=x', 'page', 'The page field must be an integer.'],
  ])('refuses %s with a 422', async (query, field, message) => {
    const { client } = await userWith(0)
    const res = await client.get(`/api/credit-holds?${query}`)
    expect(res.status).toBe(422)
    expect(res.data).toEqual(unprocessable(field, message))
  })
})

describe('holds belong to their user', () => {
  it('another user cannot see, capture, release or transfer them: to them they are unknown', async () => {
    const ada = await userWith(10)
    const bob = await userWith(10)
    const created = await ada.client.post('/api/credit-holds', {
      broker_parent_order_id: 'SHARED',
      credits_amount: 3,
    })
    await ada.client.post('/api/credit-holds', { broker_parent_order_id: 'ADA-2', credits_amount: 1 })

    expect((await bob.client.get('/api/credit-holds')).data).toMatchObject({ total: 0, data: [] })
    expect(
      (await bob.client.post('/api/credit-holds/capture', { broker_parent_order_id: 'SHARED' })).data,
    ).toEqual({
      captured: false,
    })
    expect(
      (await bob.client.post('/api/credit-holds/release', { broker_parent_order_id: 'SHARED' })).data,
    ).toEqual({
      released: false,
    })
    const moved = await bob.client.post('/api/credit-holds/transfer', {
      from_broker_parent_order_id: 'SHARED',
      to_broker_parent_order_id: 'BOB-1',
    })
    expect(moved.data).toEqual({ transferred: false })
    // The same order id is a separate hold of Bob's, on Bob's credits; and it does not block Ada's transfer.
    const bobs = await bob.client.post('/api/credit-holds', {
      broker_parent_order_id: 'SHARED',
      credits_amount: 2,
    })
    expect(bobs.status).toBe(201)
    expect(bobs.data.id).not.toBe(created.data.id)
    expect(
      (
        await bob.client.post('/api/credit-holds/transfer', {
          from_broker_parent_order_id: 'SHARED',
          to_broker_parent_order_id: 'ADA-2',
        })
      ).data,
    ).toEqual({ transferred: true })

    expect(await holdsOf(ada.user.id)).toMatchObject([
      { brokerParentOrderId: 'SHARED', status: 'held' },
      { brokerParentOrderId: 'ADA-2', status: 'held' },
    ])
    expect(await summaryOf(ada.client)).toEqual({ available: 10, held: 4, automation: 6 })
    expect(await summaryOf(bob.client)).toEqual({ available: 10, held: 2, automation: 8 })
    expect((await ada.client.get('/api/credit-holds')).data.total).toBe(2)
  })
})
