import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import type { TestApp } from '../../../../test/helpers/build-test-app.ts'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { creditFigures, signedInClient } from '../../../../test/helpers/factories.ts'
import {
  checkoutEvent,
  deliverWebhook,
  disputeEvent,
  refundEvent,
  startCheckoutIn,
} from '../../../../test/helpers/fake-stripe.ts'
import { memoryLog } from '../../../../test/helpers/memory-log.ts'
import { parseSamples, sampleValue } from '../../../../test/helpers/prometheus.ts'
import { appUnderTest, fakeStripeUnderTest } from '../../../../test/helpers/under-test.ts'
import { creditPurchases, creditTransactions, deferredPaymentEvents } from '../../../db/schema/index.ts'
import { auditLedger } from '../ledger-audit.ts'

const WEBHOOK_SECRET = 'whsec_test_secret_for_reversals'
const METRICS_TOKEN = `metrics-${randomBytes(8).toString('hex')}`
const log = memoryLog()

const stripe = fakeStripeUnderTest()
const t = appUnderTest(() => ({
  env: {
    STRIPE_SECRET_KEY: 'sk_test_fake_key_for_reversals',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_BASE: stripe.url,
    METRICS_TOKEN,
  },
  loggerInstance: log.logger,
}))

const deliver = (app: TestApp, payload: string) => deliverWebhook(app.baseUrl, payload, WEBHOOK_SECRET)

async function deliverOk(payload: string) {
  expect(await deliver(t, payload)).toEqual({ status: 200, data: { received: true } })
}

const startCheckout = (client: TestClient, packageId: string) => startCheckoutIn(stripe, client, packageId)

/** A whole purchase: the checkout started in the app, then paid (the amount it offered) and credited. */
async function buy(client: TestClient, packageId = 'pro') {
  const { sessionId, metadata, amount } = await startCheckout(client, packageId)
  const paymentIntent = `pi_${randomBytes(8).toString('hex')}`
  const paid = checkoutEvent({ sessionId, metadata, amountTotal: amount, currency: 'usd', paymentIntent })
  await deliverOk(paid.payload)
  return { sessionId, paymentIntent, amount }
}

const rowsOf = (userId: number) =>
  t.database.db
    .select()
    .from(creditTransactions)
    .where(eq(creditTransactions.userId, userId))
    .orderBy(creditTransactions.id)

const purchaseOf = async (sessionId: string) => {
  const [row] = await t.database.db
    .select()
    .from(creditPurchases)
    .where(eq(creditPurchases.checkoutSessionId, sessionId))
  return row
}

async function webhookCounts() {
  const res = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  const samples = parseSamples(await res.text())
  return (outcome: string) => sampleValue(samples, 'trading_api_payment_webhook_events_total', { outcome })
}

/** The ids of the events kept for a PaymentIntent not credited yet. */
const deferredFor = async (paymentIntent: string) =>
  (
    await t.database.db
      .select({ id: deferredPaymentEvents.id })
      .from(deferredPaymentEvents)
      .where(eq(deferredPaymentEvents.paymentIntentId, paymentIntent))
  ).map((row) => row.id)

async function expectLedgerConsistent() {
  const audit = await auditLedger(t.database.db)
  expect(audit.failed).toEqual([])
}

describe('the webhook checks what was paid', () => {
  it('credits nothing when the amount or the currency differs from the checkout; logs an error, counts it, answers 200', async () => {
    const { client, user } = await signedInClient(t)
    const countedBefore = await webhookCounts()
    for (const [amountTotal, currency] of [
      [100, 'usd'],
      [4900, 'eur'],
      [4901, 'usd'],
    ] as const) {
      const { sessionId, metadata } = await startCheckout(client, 'pro')
      log.text = ''
      const paid = checkoutEvent({ sessionId, metadata, amountTotal, currency })
      await deliverOk(paid.payload)
      // Replayed, the same: nothing.
      await deliverOk(paid.payload)
      expect((await purchaseOf(sessionId))?.status).toBe('rejected')
      const error = log
        .lines()
        .find((line) => line.msg === 'paid amount differs from the checkout: nothing credited')
      expect(error).toMatchObject({
        level: 50,
        checkout_session: sessionId,
        paid: { amount: amountTotal, currency },
      })
      expect(error?.expected).toEqual({ amount: 4900, currency: 'usd' })
    }
    expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
    expect(await rowsOf(user.id)).toEqual([])
    const countedAfter = await webhookCounts()
    expect(countedAfter('amount_mismatch') - countedBefore('amount_mismatch')).toBe(3)
    expect(countedAfter('duplicate') - countedBefore('duplicate')).toBe(3)
    expect(countedAfter('credited') - countedBefore('credited')).toBe(0)
  })

  it('a session started before purchases were recorded is checked against its package in the catalog', async () => {
    const { client, user } = await signedInClient(t)
    const metadata = { user_id: String(user.id), package_id: 'starter' }
    const short = checkoutEvent({ metadata, amountTotal: 90, currency: 'usd' })
    await deliverOk(short.payload)
    expect((await creditFigures(client)).available).toBe(0)
    const right = checkoutEvent({ metadata, amountTotal: 900, currency: 'usd' })
    await deliverOk(right.payload)
    expect((await creditFigures(client)).available).toBe(100)
  })

  it('credits once when 10 deliveries of a matching and 10 of a mismatched session race', async () => {
    const { client } = await signedInClient(t)
    const good = await startCheckout(client, 'starter')
    const bad = await startCheckout(client, 'pro')
    const goodEvent = checkoutEvent({ ...good, amountTotal: 900, currency: 'usd' })
    const badEvent = checkoutEvent({ ...bad, amountTotal: 49, currency: 'usd' })
    const answers = await Promise.all(
      [...Array(10).fill(goodEvent), ...Array(10).fill(badEvent)].map((e: typeof goodEvent) =>
        deliver(t, e.payload),
      ),
    )
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect((await creditFigures(client)).available).toBe(100)
    await expectLedgerConsistent()
  })
})

describe('refunds take the credits back', () => {
  it('a full refund takes back every credit, once, as a refund row linked to the purchase', async () => {
    const { client, user } = await signedInClient(t)
    const { sessionId, paymentIntent } = await buy(client, 'pro')
    expect((await creditFigures(client)).available).toBe(600)
    const refund = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 4900 })
    await deliverOk(refund.payload)
    await deliverOk(refund.payload)
    expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
    const purchase = await purchaseOf(sessionId)
    const rows = await rowsOf(user.id)
    expect(rows.map((r) => [r.kind, r.amount, r.balanceAfter, r.reference, r.purchaseId])).toEqual([
      ['purchase', '600.0000', '600.0000', sessionId, purchase?.id],
      ['refund', '-600.0000', '0.0000', refund.refundId, purchase?.id],
    ])
    expect(purchase).toMatchObject({ amountRefunded: 4900, creditsRefunded: '600.0000' })
    const history = (await client.get('/api/transaction-history')).data.data
    // The refund row names the purchase it reverses: the package, the purchase row's reference, its date.
    expect(history[1]).toMatchObject({ kind: 'purchase', reference: sessionId })
    expect(history[0]).toEqual({
      id: expect.any(Number),
      kind: 'refund',
      amount: -600,
      balance_after: 0,
      reference: refund.refundId,
      reason: 'Stripe refund of 4900 of 4900 usd paid',
      created_at: expect.any(String),
      purchase: { package_id: 'pro', reference: sessionId, created_at: history[1].purchase.created_at },
    })
    expect(history[1].purchase).toEqual({
      package_id: 'pro',
      reference: sessionId,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    })
    await expectLedgerConsistent()
  })

  it('partial refunds take credits in proportion to the running refunded total, in any order of delivery', async () => {
    const { client } = await signedInClient(t)
    const { paymentIntent } = await buy(client, 'pro')
    const half = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 2450 })
    const quarter = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 1225 })
    await deliverOk(quarter.payload)
    expect((await creditFigures(client)).available).toBe(450)
    await deliverOk(half.payload)
    expect((await creditFigures(client)).available).toBe(300)
    // A late delivery of an older total takes nothing more.
    await deliverOk(quarter.payload)
    const older = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 1000 })
    await deliverOk(older.payload)
    expect((await creditFigures(client)).available).toBe(300)
    // 1/3 of the price: 200 credits, exact to 1/10000.
    const { paymentIntent: other } = await buy(client, 'starter')
    await deliverOk(refundEvent({ paymentIntent: other, amount: 900, amountRefunded: 300 }).payload)
    expect((await creditFigures(client)).available).toBe(300 + 100 - 33.3333)
    await expectLedgerConsistent()
  })

  it('credits already spent: the balance goes below zero, new holds answer 422, and the user object and admin billing show it', async () => {
    const { client, user } = await signedInClient(t)
    const admin = await signedInClient(t, { isAdmin: true })
    const { paymentIntent } = await buy(client, 'starter')
    const hold = { broker_parent_order_id: `ord-${randomBytes(4).toString('hex')}`, credits_amount: 80 }
    expect((await client.post('/api/credit-holds', hold)).status).toBe(201)
    expect(
      (
        await client.post('/api/credit-holds/capture', {
          broker_parent_order_id: hold.broker_parent_order_id,
        })
      ).data,
    ).toEqual({ captured: true })
    const still = { broker_parent_order_id: `ord-${randomBytes(4).toString('hex')}`, credits_amount: 15 }
    expect((await client.post('/api/credit-holds', still)).status).toBe(201)
    expect(await creditFigures(client)).toEqual({ available: 20, held: 15, spendable: 5 })

    await deliverOk(refundEvent({ paymentIntent, amount: 900, amountRefunded: 900 }).payload)
    expect(await creditFigures(client)).toEqual({ available: -80, held: 15, spendable: -95 })
    const refused = await client.post('/api/credit-holds', {
      broker_parent_order_id: 'after-refund',
      credits_amount: 1,
    })
    expect(refused.status).toBe(422)
    expect(refused.data.errors.credits_amount[0]).toBe(
      'Insufficient credits: -95 spendable, below zero after a refund, a payment dispute or a paid AI answer.',
    )
    const billing = await admin.client.get(`/api/admin/users/${user.id}/billing`)
    expect(billing.data).toMatchObject({
      available_credits: -80,
      held_credits: 15,
      credits_available_for_automation: -95,
    })
    expect(billing.data.transactions[0]).toMatchObject({ kind: 'refund', amount: -100, balance_after: -80 })

    // The hold placed before the refund can still be captured (the order filled): further below zero.
    expect(
      (
        await client.post('/api/credit-holds/capture', {
          broker_parent_order_id: still.broker_parent_order_id,
        })
      ).data,
    ).toEqual({ captured: true })
    expect(await creditFigures(client)).toEqual({ available: -95, held: 0, spendable: -95 })
    await expectLedgerConsistent()

    // Buying again pays the debt first; holds work again once spendable covers them.
    await buy(client, 'starter')
    expect(await creditFigures(client)).toEqual({ available: 5, held: 0, spendable: 5 })
    expect(
      (await client.post('/api/credit-holds', { broker_parent_order_id: 'after-buying', credits_amount: 5 }))
        .status,
    ).toBe(201)
    await expectLedgerConsistent()
  })

  it('10 deliveries each of two refund events race: the credits of the larger total, taken once', async () => {
    const { client, user } = await signedInClient(t)
    const { paymentIntent } = await buy(client, 'pro')
    const part = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 980 })
    const all = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 4900 })
    const answers = await Promise.all(
      [...Array(10).fill(part), ...Array(10).fill(all)].map((e: typeof part) => deliver(t, e.payload)),
    )
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect((await creditFigures(client)).available).toBe(0)
    const refunds = (await rowsOf(user.id)).filter((r) => r.kind === 'refund')
    expect(refunds.length).toBeGreaterThanOrEqual(1)
    expect(refunds.length).toBeLessThanOrEqual(2)
    await expectLedgerConsistent()
  })

  it('a refund of a payment this service does not know yet credits nothing, is kept, counted and answered 200', async () => {
    const countedBefore = await webhookCounts()
    log.text = ''
    const paymentIntent = `pi_nobody_knows_${randomBytes(4).toString('hex')}`
    const refund = refundEvent({ paymentIntent, amount: 900, amountRefunded: 900 })
    await deliverOk(refund.payload)
    await deliverOk(refund.payload)
    expect(
      log.lines().some((line) => line.msg === 'payment reversal kept until its payment is credited'),
    ).toBe(true)
    const counted = await webhookCounts()
    expect(counted('deferred') - countedBefore('deferred')).toBe(1)
    expect(counted('duplicate') - countedBefore('duplicate')).toBe(1)
    expect(await deferredFor(paymentIntent)).toEqual([refund.id])
  })
})

describe('reversals that come before the payment is credited', () => {
  it('a refund before the paid event: kept, then taken back in the transaction that credits the payment', async () => {
    const { client, user } = await signedInClient(t)
    const { sessionId, metadata, amount } = await startCheckout(client, 'pro')
    const paymentIntent = `pi_${randomBytes(8).toString('hex')}`
    const refund = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 4900 })
    await deliverOk(refund.payload)
    expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
    const paid = checkoutEvent({ sessionId, metadata, amountTotal: amount, currency: 'usd', paymentIntent })
    await deliverOk(paid.payload)
    expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
    const purchase = await purchaseOf(sessionId)
    expect(purchase).toMatchObject({ status: 'paid', amountRefunded: 4900, creditsRefunded: '600.0000' })
    expect((await rowsOf(user.id)).map((r) => [r.kind, r.amount, r.reference, r.purchaseId])).toEqual([
      ['purchase', '600.0000', sessionId, purchase?.id],
      ['refund', '-600.0000', refund.refundId, purchase?.id],
    ])
    expect(await deferredFor(paymentIntent)).toEqual([])
    // Delivered again (the provider retries it, or the first delivery's answer was lost): nothing.
    await deliverOk(refund.payload)
    await deliverOk(paid.payload)
    expect((await creditFigures(client)).available).toBe(0)
    await expectLedgerConsistent()
  })

  it('a dispute opened and a partial refund before the paid event, then won: the order of arrival changes nothing', async () => {
    const { client } = await signedInClient(t)
    const { sessionId, metadata, amount } = await startCheckout(client, 'pro')
    const paymentIntent = `pi_${randomBytes(8).toString('hex')}`
    const opened = disputeEvent({ type: 'charge.dispute.created', paymentIntent, amount: 2450 })
    const refund = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 3675 })
    await deliverOk(opened.payload)
    await deliverOk(refund.payload)
    await deliverOk(
      checkoutEvent({ sessionId, metadata, amountTotal: amount, currency: 'usd', paymentIntent }).payload,
    )
    // As when they came after the payment: 300 withheld, the refund of 450 takes 300 free and 150 withheld.
    expect(await purchaseOf(sessionId)).toMatchObject({
      creditsRefunded: '450.0000',
      creditsDisputed: '150.0000',
      disputeStatus: 'open',
    })
    await deliverOk(
      disputeEvent({
        type: 'charge.dispute.closed',
        paymentIntent,
        amount: 2450,
        status: 'won',
        disputeId: opened.disputeId,
      }).payload,
    )
    expect((await creditFigures(client)).available).toBe(150)
    await expectLedgerConsistent()
  })

  it('10 deliveries each of the paid event and of a full refund race: credited once, taken back once', async () => {
    const { client, user } = await signedInClient(t)
    const { sessionId, metadata, amount } = await startCheckout(client, 'pro')
    const paymentIntent = `pi_${randomBytes(8).toString('hex')}`
    const paid = checkoutEvent({ sessionId, metadata, amountTotal: amount, currency: 'usd', paymentIntent })
    const refund = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 4900 })
    const answers = await Promise.all(
      [...Array(10).fill(refund), ...Array(10).fill(paid)].map((e: { payload: string }) =>
        deliver(t, e.payload),
      ),
    )
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
    expect((await rowsOf(user.id)).map((r) => r.kind)).toEqual(['purchase', 'refund'])
    expect(await deferredFor(paymentIntent)).toEqual([])
    await expectLedgerConsistent()
  })
})

describe('disputes hold the credits back', () => {
  it('opened: the disputed credits are withheld; won: given back; each event once', async () => {
    const { client, user } = await signedInClient(t)
    const { sessionId, paymentIntent } = await buy(client, 'pro')
    const opened = disputeEvent({ type: 'charge.dispute.created', paymentIntent, amount: 4900 })
    await deliverOk(opened.payload)
    await deliverOk(opened.payload)
    expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
    expect((await client.post('/api/credit-holds', { broker_parent_order_id: 'disputed' })).status).toBe(422)
    const won = disputeEvent({
      type: 'charge.dispute.closed',
      paymentIntent,
      amount: 4900,
      status: 'won',
      disputeId: opened.disputeId,
    })
    await deliverOk(won.payload)
    await deliverOk(won.payload)
    expect((await creditFigures(client)).available).toBe(600)
    const purchase = await purchaseOf(sessionId)
    expect(purchase).toMatchObject({
      disputeId: opened.disputeId,
      disputeStatus: 'won',
      creditsDisputed: '0.0000',
    })
    const rows = (await rowsOf(user.id)).slice(1)
    expect(rows.map((r) => [r.kind, r.amount, r.reference, r.purchaseId])).toEqual([
      ['dispute_withheld', '-600.0000', opened.disputeId, purchase?.id],
      ['dispute_returned', '600.0000', opened.disputeId, purchase?.id],
    ])
    await expectLedgerConsistent()
  })

  it('lost: the withheld credits stay taken, below zero when already spent', async () => {
    const { client, user } = await signedInClient(t)
    const { paymentIntent } = await buy(client, 'starter')
    await client.post('/api/credit-holds', { broker_parent_order_id: 'spent', credits_amount: 60 })
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'spent' })
    const opened = disputeEvent({ type: 'charge.dispute.created', paymentIntent, amount: 900 })
    await deliverOk(opened.payload)
    expect((await creditFigures(client)).available).toBe(-60)
    const lost = disputeEvent({
      type: 'charge.dispute.closed',
      paymentIntent,
      amount: 900,
      status: 'lost',
      disputeId: opened.disputeId,
    })
    await deliverOk(lost.payload)
    expect((await creditFigures(client)).available).toBe(-60)
    expect((await rowsOf(user.id)).map((r) => r.kind)).toEqual([
      'purchase',
      'hold_capture',
      'dispute_withheld',
    ])
    await expectLedgerConsistent()
  })

  it('out of order: a lost close without its opening takes the share once; a won close first makes a late opening do nothing', async () => {
    const { client } = await signedInClient(t)
    const first = await buy(client, 'starter')
    const lost = disputeEvent({
      type: 'charge.dispute.closed',
      paymentIntent: first.paymentIntent,
      amount: 450,
      status: 'lost',
    })
    await deliverOk(lost.payload)
    expect((await creditFigures(client)).available).toBe(50)
    const lateOpening = disputeEvent({
      type: 'charge.dispute.created',
      paymentIntent: first.paymentIntent,
      amount: 450,
      disputeId: lost.disputeId,
    })
    await deliverOk(lateOpening.payload)
    expect((await creditFigures(client)).available).toBe(50)

    const second = await buy(client, 'starter')
    const won = disputeEvent({
      type: 'charge.dispute.closed',
      paymentIntent: second.paymentIntent,
      amount: 900,
      status: 'won',
    })
    await deliverOk(won.payload)
    await deliverOk(
      disputeEvent({
        type: 'charge.dispute.created',
        paymentIntent: second.paymentIntent,
        amount: 900,
        disputeId: won.disputeId,
      }).payload,
    )
    expect((await creditFigures(client)).available).toBe(150)
    await expectLedgerConsistent()
  })

  for (const closedAs of ['won', 'warning_closed'] as const) {
    it(`a full refund while the dispute is open, then closed ${closedAs}: the credits go back to nobody`, async () => {
      const { client, user } = await signedInClient(t)
      const { sessionId, paymentIntent } = await buy(client, 'pro')
      const opened = disputeEvent({ type: 'charge.dispute.created', paymentIntent, amount: 4900 })
      await deliverOk(opened.payload)
      const refund = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 4900 })
      await deliverOk(refund.payload)
      expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
      const closed = disputeEvent({
        type: 'charge.dispute.closed',
        paymentIntent,
        amount: 4900,
        status: closedAs,
        disputeId: opened.disputeId,
      })
      await deliverOk(closed.payload)
      await deliverOk(refund.payload)
      // The money went back to the buyer by the refund: so did not the credits.
      expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
      const purchase = await purchaseOf(sessionId)
      expect(purchase).toMatchObject({
        amountRefunded: 4900,
        creditsRefunded: '600.0000',
        disputeStatus: 'won',
        creditsDisputed: '0.0000',
      })
      expect((await rowsOf(user.id)).map((r) => [r.kind, r.amount, r.balanceAfter, r.reference])).toEqual([
        ['purchase', '600.0000', '600.0000', sessionId],
        ['dispute_withheld', '-600.0000', '0.0000', opened.disputeId],
        ['dispute_returned', '600.0000', '600.0000', opened.disputeId],
        ['refund', '-600.0000', '0.0000', refund.refundId],
      ])
      await expectLedgerConsistent()
    })
  }

  it('a partial refund while a partial dispute is open takes the free credits first, then the withheld; a won close gives back the rest', async () => {
    const { client } = await signedInClient(t)
    const { sessionId, paymentIntent } = await buy(client, 'pro')
    // 600 credits for 4900: the dispute withholds half (300), 300 stay free.
    const opened = disputeEvent({ type: 'charge.dispute.created', paymentIntent, amount: 2450 })
    await deliverOk(opened.payload)
    expect((await creditFigures(client)).available).toBe(300)
    // A refund of three quarters (450): the 300 free credits, then 150 of the withheld ones.
    await deliverOk(refundEvent({ paymentIntent, amount: 4900, amountRefunded: 3675 }).payload)
    expect((await creditFigures(client)).available).toBe(0)
    expect(await purchaseOf(sessionId)).toMatchObject({
      creditsRefunded: '450.0000',
      creditsDisputed: '150.0000',
    })
    const won = disputeEvent({
      type: 'charge.dispute.closed',
      paymentIntent,
      amount: 2450,
      status: 'won',
      disputeId: opened.disputeId,
    })
    await deliverOk(won.payload)
    // What was neither refunded nor kept: 600 - 450.
    expect((await creditFigures(client)).available).toBe(150)
    await expectLedgerConsistent()
  })

  it('a refund while the dispute is open, then lost: taken back once, never twice', async () => {
    const { client } = await signedInClient(t)
    const { paymentIntent } = await buy(client, 'pro')
    const opened = disputeEvent({ type: 'charge.dispute.created', paymentIntent, amount: 4900 })
    await deliverOk(opened.payload)
    await deliverOk(refundEvent({ paymentIntent, amount: 4900, amountRefunded: 2450 }).payload)
    await deliverOk(
      disputeEvent({
        type: 'charge.dispute.closed',
        paymentIntent,
        amount: 4900,
        status: 'lost',
        disputeId: opened.disputeId,
      }).payload,
    )
    expect(await creditFigures(client)).toEqual({ available: 0, held: 0, spendable: 0 })
    await expectLedgerConsistent()
  })

  it('the opening and the close, 10 deliveries each, race: withheld and given back exactly once', async () => {
    const { client, user } = await signedInClient(t)
    const { paymentIntent } = await buy(client, 'pro')
    const opened = disputeEvent({ type: 'charge.dispute.created', paymentIntent, amount: 4900 })
    const won = disputeEvent({
      type: 'charge.dispute.closed',
      paymentIntent,
      amount: 4900,
      status: 'won',
      disputeId: opened.disputeId,
    })
    const answers = await Promise.all(
      [...Array(10).fill(opened), ...Array(10).fill(won)].map((e: typeof opened) => deliver(t, e.payload)),
    )
    expect(answers.every((a) => a.status === 200)).toBe(true)
    expect((await creditFigures(client)).available).toBe(600)
    const kinds = (await rowsOf(user.id)).map((r) => r.kind)
    // Whichever came first: withheld then returned, or a won close first and nothing moved.
    expect([['purchase', 'dispute_withheld', 'dispute_returned'], ['purchase']]).toContainEqual(kinds)
    await expectLedgerConsistent()
  })
})

describe('money records outlive the account', () => {
  it('a user who deletes their account keeps their purchases, ledger and account rows; a later refund still applies', async () => {
    const { client, user, password } = await signedInClient(t)
    const { sessionId, paymentIntent } = await buy(client, 'pro')
    await client.post('/api/credit-holds', { broker_parent_order_id: 'before-leaving', credits_amount: 100 })
    await client.post('/api/credit-holds/capture', { broker_parent_order_id: 'before-leaving' })
    const before = await rowsOf(user.id)
    expect(before.map((r) => r.kind)).toEqual(['purchase', 'hold_capture'])

    const deleted = await client.delete('/api/user-profile', { password })
    expect(deleted.status).toBe(200)
    expect(await rowsOf(user.id)).toEqual(before)
    expect(await purchaseOf(sessionId)).toMatchObject({ userId: user.id, status: 'paid' })
    await expectLedgerConsistent()

    // The buyer's bank refunds after the account is gone: the credits are taken back all the same.
    const refund = refundEvent({ paymentIntent, amount: 4900, amountRefunded: 4900 })
    await deliverOk(refund.payload)
    expect((await rowsOf(user.id)).map((r) => [r.kind, r.amount, r.balanceAfter])).toEqual([
      ['purchase', '600.0000', '600.0000'],
      ['hold_capture', '-100.0000', '500.0000'],
      ['refund', '-600.0000', '-100.0000'],
    ])
    expect(await purchaseOf(sessionId)).toMatchObject({ creditsRefunded: '600.0000' })
    await expectLedgerConsistent()
  })
})
