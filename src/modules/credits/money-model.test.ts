import { randomBytes } from 'node:crypto'
import { eq } from 'drizzle-orm'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import type { TestClient } from '../../../test/helpers/client.ts'
import { creditFigures, signedInAdmin, signedInClient } from '../../../test/helpers/factories.ts'
import {
  checkoutEvent,
  deliverWebhook,
  disputeEvent,
  refundEvent,
  startCheckoutIn,
} from '../../../test/helpers/fake-stripe.ts'
import { appUnderTest, fakeStripeUnderTest } from '../../../test/helpers/under-test.ts'
import { creditAccounts } from '../../db/schema/index.ts'
import { creditUnitsToString, toCreditUnits } from '../../lib/decimal.ts'
import { auditLedger } from './ledger-audit.ts'
import { proportionalCredits } from './purchases/proportional-credits.ts'

/**
 * The money, checked against a small model of what the payments back, over random sequences of
 * ordinary events: checkouts paid at once or later, partial and full refunds, disputes opened and
 * closed every way, each event replayed and delivered in any order (before its payment among
 * them), holds placed, captured, released and expired, admin adjustments, paid AI answers, and the
 * account deleted. After each sequence the user object's three figures (or, once the account is
 * gone, its credit account row) equal the model, and the ledger audit passes.
 *
 * MONEY_MODEL_RUNS sets how many sequences run (default 150); a failure prints its seed and path,
 * which MONEY_MODEL_SEED and MONEY_MODEL_PATH replay.
 */

const WEBHOOK_SECRET = 'whsec_test_secret_for_the_money_model'
const TTL_HOURS = 1
const stripe = fakeStripeUnderTest()
const t = appUnderTest(() => ({
  env: {
    STRIPE_SECRET_KEY: 'sk_test_fake_key_for_the_money_model',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_BASE: stripe.url,
    HOLD_TTL_HOURS: String(TTL_HOURS),
    // Expiring holds moves the clock by hours: the session must outlive them.
    SESSION_LIFETIME: '100000',
    SESSION_ABSOLUTE_LIFETIME: '100000',
    PASSWORD_TIMEOUT: '9999999',
  },
}))

let admin: TestClient
beforeAll(async () => {
  admin = (await signedInAdmin(t)).client
})

// --- What a sequence is made of ---------------------------------------------------------------

const PACKAGES = { starter: { credits: '100', amount: 900 }, pro: { credits: '600', amount: 4900 } } as const
type PackageId = keyof typeof PACKAGES
type Close = 'won' | 'lost' | 'warning_closed'

/** One purchase and the provider events it will have, as fractions of its price. */
interface PurchasePlan {
  packageId: PackageId
  async: boolean
  /** Running refunded totals, each a fraction (0, 1] of the price. */
  refunds: number[]
  dispute: { share: number; opened: boolean; close: Close | null } | null
}

type Step =
  | { kind: 'deliver'; event: number }
  | { kind: 'hold'; credits: number }
  | { kind: 'capture'; hold: number }
  | { kind: 'release'; hold: number }
  | { kind: 'expire' }
  | { kind: 'adjust'; credits: number }
  | { kind: 'answer'; cost: '0.5' | '1' | '2' }

interface Sequence {
  purchases: PurchasePlan[]
  steps: Step[]
  deleteAccount: boolean
}

const fraction = fc.integer({ min: 1, max: 100 }).map((n) => n / 100)
const purchasePlan: fc.Arbitrary<PurchasePlan> = fc.record({
  packageId: fc.constantFrom<PackageId>('starter', 'pro'),
  async: fc.boolean(),
  refunds: fc.array(fraction, { maxLength: 2 }),
  dispute: fc.option(
    fc.record({
      share: fraction,
      opened: fc.boolean(),
      close: fc.option(fc.constantFrom<Close>('won', 'lost', 'warning_closed'), { nil: null }),
    }),
    { nil: null },
  ),
})
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.nat(30).map((event) => ({ kind: 'deliver' as const, event })) },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 1, max: 80 }).map((credits) => ({ kind: 'hold' as const, credits })),
  },
  { weight: 1, arbitrary: fc.nat(5).map((hold) => ({ kind: 'capture' as const, hold })) },
  { weight: 1, arbitrary: fc.nat(5).map((hold) => ({ kind: 'release' as const, hold })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: -40, max: 60 })
      .filter((n) => n !== 0)
      .map((credits) => ({ kind: 'adjust' as const, credits })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('0.5', '1', '2').map((cost) => ({ kind: 'answer' as const, cost })),
  },
)
const sequence: fc.Arbitrary<Sequence> = fc.record({
  purchases: fc.array(purchasePlan, { minLength: 1, maxLength: 2 }),
  steps: fc.array(step, { maxLength: 14 }),
  deleteAccount: fc.boolean(),
})

// --- The model ---------------------------------------------------------------------------------

/** What the provider has told the service about one purchase so far (a set: order does not matter). */
interface PurchaseSeen {
  credits: string
  amount: number
  paid: boolean
  refunded: number
  disputeAmount: number
  opened: boolean
  closed: Close | null
}

/** The credits a purchase still backs: bought, less what refunds and a dispute not won took back. */
function backed(p: PurchaseSeen): bigint {
  if (!p.paid) return 0n
  const credits = toCreditUnits(p.credits)
  const refunded = toCreditUnits(proportionalCredits(p.credits, p.refunded, p.amount))
  const won = p.closed === 'won' || p.closed === 'warning_closed'
  const disputed = !won && (p.opened || p.closed === 'lost')
  const share = disputed ? toCreditUnits(proportionalCredits(p.credits, p.disputeAmount, p.amount)) : 0n
  const taken = refunded + share < credits ? refunded + share : credits
  return credits - taken
}

interface Model {
  purchases: PurchaseSeen[]
  /** Admin adjustments, less captures and paid answers, in 1/10000 credits. */
  other: bigint
  holds: { order: string; credits: bigint; status: 'held' | 'captured' | 'released' }[]
}

const balanceOf = (m: Model) => m.purchases.reduce((sum, p) => sum + backed(p), 0n) + m.other
const heldOf = (m: Model) => m.holds.reduce((sum, h) => sum + (h.status === 'held' ? h.credits : 0n), 0n)
const figuresOf = (m: Model) => ({
  available: Number(creditUnitsToString(balanceOf(m))),
  held: Number(creditUnitsToString(heldOf(m))),
  spendable: Number(creditUnitsToString(balanceOf(m) - heldOf(m))),
})

// --- Running a sequence ------------------------------------------------------------------------

interface PlannedEvent {
  purchase: number
  payload: string
  /** What its delivery tells the model. */
  apply(seen: PurchaseSeen): void
}

async function plannedEvents(client: TestClient, plans: PurchasePlan[], model: Model) {
  const events: PlannedEvent[] = []
  for (const [index, plan] of plans.entries()) {
    const { sessionId, metadata, amount } = await startCheckoutIn(stripe, client, plan.packageId)
    const paymentIntent = `pi_${randomBytes(8).toString('hex')}`
    const dispute = plan.dispute
    const disputeAmount = dispute ? Math.ceil(amount * dispute.share) : 0
    model.purchases.push({
      credits: PACKAGES[plan.packageId].credits,
      amount,
      paid: false,
      refunded: 0,
      disputeAmount,
      opened: false,
      closed: null,
    })
    const paid = checkoutEvent({
      sessionId,
      metadata,
      amountTotal: amount,
      currency: 'usd',
      paymentIntent,
      type: plan.async ? 'checkout.session.async_payment_succeeded' : 'checkout.session.completed',
    })
    events.push({
      purchase: index,
      payload: paid.payload,
      apply: (seen) => {
        seen.paid = true
      },
    })
    for (const part of plan.refunds) {
      const refunded = Math.ceil(amount * part)
      const refund = refundEvent({ paymentIntent, amount, amountRefunded: refunded })
      events.push({
        purchase: index,
        payload: refund.payload,
        apply: (seen) => {
          seen.refunded = Math.max(seen.refunded, refunded)
        },
      })
    }
    if (dispute) {
      const disputeId = `dp_${randomBytes(8).toString('hex')}`
      if (dispute.opened) {
        const opened = disputeEvent({
          type: 'charge.dispute.created',
          paymentIntent,
          amount: disputeAmount,
          disputeId,
        })
        events.push({
          purchase: index,
          payload: opened.payload,
          apply: (seen) => {
            seen.opened = true
          },
        })
      }
      const close = dispute.close
      if (close) {
        const closed = disputeEvent({
          type: 'charge.dispute.closed',
          paymentIntent,
          amount: disputeAmount,
          status: close,
          disputeId,
        })
        events.push({
          purchase: index,
          payload: closed.payload,
          apply: (seen) => {
            seen.closed = close
          },
        })
      }
    }
  }
  return events
}

async function deliver(event: PlannedEvent, model: Model) {
  const signedAt = Math.floor(t.clock.nowMs() / 1000)
  const res = await deliverWebhook(t.baseUrl, event.payload, WEBHOOK_SECRET, signedAt)
  expect(res).toEqual({ status: 200, data: { received: true } })
  event.apply(model.purchases[event.purchase] as PurchaseSeen)
}

/** Runs one sequence against the app, checking the model as it goes and at the end. */
async function run(seq: Sequence) {
  const { client, user, password } = await signedInClient(t)
  const model: Model = { purchases: [], other: 0n, holds: [] }
  const events = await plannedEvents(client, seq.purchases, model)
  const spendable = () => balanceOf(model) - heldOf(model)

  for (const s of seq.steps) {
    switch (s.kind) {
      case 'deliver':
        await deliver(events[s.event % events.length] as PlannedEvent, model)
        break
      case 'hold': {
        const order = `order-${model.holds.length}`
        const credits = toCreditUnits(String(s.credits))
        const res = await client.post('/api/credit-holds', {
          broker_parent_order_id: order,
          credits_amount: s.credits,
        })
        // Placed exactly when the spendable credits cover it.
        expect(res.status).toBe(spendable() >= credits ? 201 : 422)
        if (res.status === 201) model.holds.push({ order, credits, status: 'held' })
        break
      }
      case 'capture':
      case 'release': {
        const hold = model.holds[s.hold]
        if (!hold) break
        const res = await client.post(`/api/credit-holds/${s.kind}`, { broker_parent_order_id: hold.order })
        expect(res.status).toBe(200)
        if (hold.status !== 'held') break
        if (s.kind === 'capture') model.other -= hold.credits
        hold.status = s.kind === 'capture' ? 'captured' : 'released'
        break
      }
      case 'expire':
        t.clock.advance((TTL_HOURS * 3600 + 1) * 1000)
        await t.app.services.holds.expireHeld()
        for (const hold of model.holds) if (hold.status === 'held') hold.status = 'released'
        break
      case 'adjust': {
        const credits = toCreditUnits(String(s.credits))
        const res = await admin.post(`/api/admin/users/${user.id}/billing/adjust`, {
          amount: s.credits,
          reason: 'model',
        })
        expect(res.status).toBe(credits > 0n || spendable() + credits >= 0n ? 200 : 422)
        if (res.status === 200) model.other += credits
        break
      }
      case 'answer': {
        // A delivered answer: charged whatever is left (the meter's completion writes this row).
        await t.app.services.ledger.withLockedAccount(user.id, (tx) =>
          t.app.services.ledger.append(tx, {
            userId: user.id,
            amount: `-${s.cost}`,
            kind: 'feature_use',
            reference: 'ai_trading_agent',
          }),
        )
        model.other -= toCreditUnits(s.cost)
        break
      }
    }
  }
  expect(await creditFigures(client)).toEqual(figuresOf(model))

  if (seq.deleteAccount) {
    expect((await client.delete('/api/user-profile', { password })).status).toBe(200)
  }
  // Every event once more, in reverse: the late and the replayed ones.
  for (const event of [...events].reverse()) await deliver(event, model)
  if (seq.deleteAccount) {
    const [account] = await t.database.db
      .select()
      .from(creditAccounts)
      .where(eq(creditAccounts.userId, user.id))
    const expected = figuresOf(model)
    expect({ available: Number(account?.balance ?? 0), held: Number(account?.held ?? 0) }).toEqual({
      available: expected.available,
      held: expected.held,
    })
  } else {
    expect(await creditFigures(client)).toEqual(figuresOf(model))
  }
  expect((await auditLedger(t.database.db)).failed).toEqual([])
}

describe('the money against a model of what the payments back', () => {
  const runs = Number(process.env.MONEY_MODEL_RUNS ?? 150)
  it(
    `${runs} random sequences of payments, reversals, holds, adjustments, answers and deletions`,
    async () => {
      const seed = process.env.MONEY_MODEL_SEED
      const path = process.env.MONEY_MODEL_PATH
      await fc.assert(fc.asyncProperty(sequence, run), {
        numRuns: runs,
        ...(seed ? { seed: Number(seed) } : {}),
        ...(path ? { path } : {}),
        endOnFailure: false,
      })
    },
    Math.max(120_000, runs * 2_000),
  )
})
