import type { Db } from '../../../db/client.ts'
import type { CreditPurchaseRow, UserRow } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { toCreditString } from '../../../lib/decimal.ts'
import { HttpError, notFound } from '../../../lib/errors.ts'
import type { EventBus } from '../../../lib/events.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'
import type { UsersService } from '../../users/users.service.ts'
import { type BillingCatalog, packageCredits, unitAmount } from '../billing.catalog.ts'
import { createBillingRepository } from '../billing.repository.ts'
import type { LedgerService } from '../ledger.service.ts'
import { createDeferredPaymentEventsRepository } from './deferred-payment-events.repository.ts'
import { createPaymentReversals } from './payment-reversals.ts'
import { createPurchasesRepository, type NewPurchase } from './purchases.repository.ts'
import { type CheckoutSession, type StripeEvent, type StripeGateway, verifiedEvent } from './stripe.client.ts'
import type { PurchaseLog, WebhookOutcome } from './webhook-outcomes.ts'

export interface PurchasesDeps {
  db: Db
  clock: Clock
  /** Hears of every webhook delivery handled, with its outcome (the metrics count them). */
  events: EventBus<ServiceEvents>
  catalog: BillingCatalog
  ledger: LedgerService
  users: UsersService
  /** Null when STRIPE_SECRET_KEY is not set. */
  gateway: StripeGateway | null
  webhookSecret: string | undefined
  /** Where Checkout sends the buyer back: the SPA (first FRONTEND_URL origin) or APP_URL. */
  returnOrigin: string
}

// The events that say a Checkout Session was paid: at once (card), or later (bank debits and the like).
const PAID_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded'])
const DISPUTE_EVENTS = new Set(['charge.dispute.created', 'charge.dispute.closed'])

const paymentsNotConfigured = () => new HttpError(503, 'Payments are not configured.')
const packageNotFound = () => notFound('Credit package not found.')
const badSignature = () => new HttpError(400, 'Invalid Stripe signature.')
const providerFailed = () =>
  new HttpError(502, 'The payment provider could not start the checkout. Please try again.')

/**
 * The purchase a session pays for, as recorded when its checkout started. A session this service
 * started before purchases were recorded has only its metadata (ours, signed into the event): its
 * package's catalog price and currency stand in for the record.
 */
function legacyPurchaseOf(session: CheckoutSession, catalog: BillingCatalog, now: Date): NewPurchase | null {
  const metadata = session.metadata ?? {}
  const userId = Number(metadata.user_id ?? session.client_reference_id)
  const pkg = metadata.package_id ? catalog.findPackage(metadata.package_id) : undefined
  if (!Number.isSafeInteger(userId) || userId < 1 || !pkg) return null
  const recorded = metadata.credits ? toCreditString(Number(metadata.credits)) : null
  return {
    userId,
    checkoutSessionId: session.id,
    packageId: pkg.id,
    credits: recorded && Number(recorded) > 0 ? recorded : packageCredits(pkg),
    amount: unitAmount(pkg),
    currency: pkg.currency,
    createdAt: now,
  }
}

const idOf = (value: string | { id: string } | null | undefined): string | null =>
  typeof value === 'string' ? value : (value?.id ?? null)

/**
 * Buying credits with Stripe Checkout: start a checkout (recording what it offers at what price),
 * credit it when Stripe says it is paid and the amount matches, and take the credits back when the
 * payment is refunded or disputed.
 */
export function createPurchasesService(deps: PurchasesDeps) {
  const { clock, catalog, ledger, users, gateway, events } = deps
  const purchases = createPurchasesRepository({ db: deps.db })
  const reversals = createPaymentReversals({ clock, ledger })

  /** A paid Checkout Session: credited once, when what was paid is what the checkout offered. */
  async function creditPaidSession(event: StripeEvent, log: PurchaseLog): Promise<WebhookOutcome> {
    const session = event.data.object as CheckoutSession
    if (session.object !== 'checkout.session' || session.payment_status !== 'paid') return 'ignored'
    const recorded = await purchases.findBySession(session.id)
    const legacy = recorded ? null : legacyPurchaseOf(session, catalog, clock.now())
    const userId = recorded?.userId ?? legacy?.userId
    // Not ours to credit (another integration's session, or an unrecorded one of a user since
    // deleted): retrying cannot help, so Stripe gets its 200 and the log keeps the trace. A recorded
    // checkout is credited even when its buyer deleted the account meanwhile: money records outlive
    // the account, and a refund of the payment then takes the credits back from that record.
    if (userId === undefined || (!recorded && !(await users.findById(userId)))) {
      log.error({ event_id: event.id, checkout_session: session.id }, 'paid checkout session not credited')
      return 'unknown_payment'
    }
    return ledger.withLockedAccount(userId, async (tx) => {
      if (!(await recordEvent(tx, event, session.id))) return 'duplicate'
      const locked = createPurchasesRepository({ db: tx })
      if (legacy) await locked.record(legacy)
      const purchase = await locked.findBySession(session.id)
      if (!purchase) throw new Error(`purchase of checkout session ${session.id} vanished under the lock`)
      // The account lock orders every delivery for this user; the unique purchase reference backs it.
      if (
        purchase.status === 'paid' ||
        (await createBillingRepository({ db: tx }).purchaseCredited(session.id))
      ) {
        return 'duplicate'
      }
      const paid = { amount: session.amount_total, currency: session.currency }
      if (
        paid.amount !== purchase.amount ||
        paid.currency?.toLowerCase() !== purchase.currency.toLowerCase()
      ) {
        await locked.update(purchase.id, { status: 'rejected' }, clock.now())
        log.error(
          {
            event_id: event.id,
            checkout_session: session.id,
            user_id: userId,
            paid,
            expected: { amount: purchase.amount, currency: purchase.currency },
          },
          'paid amount differs from the checkout: nothing credited',
        )
        return 'amount_mismatch'
      }
      await ledger.append(tx, {
        userId,
        amount: purchase.credits,
        kind: 'purchase',
        reference: session.id,
        reason: `Stripe Checkout: package ${purchase.packageId}`,
        purchaseId: purchase.id,
      })
      const paymentIntent = idOf(session.payment_intent)
      await locked.update(
        purchase.id,
        { status: 'paid', paymentIntentId: paymentIntent, paidAt: clock.now() },
        clock.now(),
      )
      if (paymentIntent) await applyDeferred(tx, purchase.checkoutSessionId, paymentIntent, log)
      return 'credited'
    })
  }

  /** The reversals of a payment that came before it was credited, applied now, oldest first. */
  async function applyDeferred(tx: Db, checkoutSessionId: string, paymentIntent: string, log: PurchaseLog) {
    const deferred = createDeferredPaymentEventsRepository({ db: tx })
    await deferred.lockPaymentIntent(paymentIntent)
    const locked = createPurchasesRepository({ db: tx })
    for (const row of await deferred.takeFor(paymentIntent)) {
      const event = row.event as StripeEvent
      if (!(await recordEvent(tx, event, checkoutSessionId))) continue
      const purchase = await locked.findBySession(checkoutSessionId)
      if (!purchase)
        throw new Error(`purchase of checkout session ${checkoutSessionId} vanished under the lock`)
      const outcome = await reversals.apply(tx, purchase, event, log)
      log.info({ event_id: event.id, type: event.type, outcome }, 'deferred payment reversal applied')
    }
  }

  /**
   * A reversal of a payment not credited (yet): kept to be applied when it is, under the
   * PaymentIntent's lock, so a credit committing meanwhile cannot miss it. Answers the purchase when
   * it was credited after all (the caller applies the reversal now), else what was done.
   */
  async function deferUnlessCredited(
    event: StripeEvent,
    paymentIntent: string,
  ): Promise<CreditPurchaseRow | 'deferred' | 'duplicate'> {
    return deps.db.transaction(async (tx) => {
      const deferred = createDeferredPaymentEventsRepository({ db: tx })
      await deferred.lockPaymentIntent(paymentIntent)
      const found = await createPurchasesRepository({ db: tx }).findByPaymentIntent(paymentIntent)
      if (found) return found
      const kept = await deferred.defer({
        id: event.id,
        type: event.type,
        paymentIntentId: paymentIntent,
        event,
        eventCreatedAt: new Date(event.created * 1000),
        createdAt: clock.now(),
      })
      return kept ? 'deferred' : 'duplicate'
    })
  }

  /** A refund or a dispute of a paid purchase, found by its PaymentIntent. */
  async function reversePayment(event: StripeEvent, log: PurchaseLog): Promise<WebhookOutcome> {
    const object = event.data.object as { payment_intent?: string | { id: string } | null }
    const paymentIntent = idOf(object.payment_intent)
    if (!paymentIntent) {
      log.error({ event_id: event.id, type: event.type }, 'payment reversal names no payment')
      return 'unknown_payment'
    }
    let found = await purchases.findByPaymentIntent(paymentIntent)
    if (!found) {
      const kept = await deferUnlessCredited(event, paymentIntent)
      if (kept === 'duplicate') return 'duplicate'
      if (kept === 'deferred') {
        log.info(
          { event_id: event.id, type: event.type, payment_intent: paymentIntent },
          'payment reversal kept until its payment is credited',
        )
        return 'deferred'
      }
      found = kept
    }
    const { userId, checkoutSessionId } = found
    return ledger.withLockedAccount(userId, async (tx) => {
      if (!(await recordEvent(tx, event, checkoutSessionId))) return 'duplicate'
      const purchase = await createPurchasesRepository({ db: tx }).findBySession(checkoutSessionId)
      if (purchase?.status !== 'paid') return 'ignored'
      return reversals.apply(tx, purchase, event, log)
    })
  }

  /** Records the event as handled, in the change's transaction; false when it already was. */
  const recordEvent = (tx: Db, event: StripeEvent, checkoutSessionId: string) =>
    createBillingRepository({ db: tx }).recordPaymentEvent({
      id: event.id,
      type: event.type,
      checkoutSessionId,
      createdAt: clock.now(),
    })

  return {
    /**
     * Creates a Checkout Session for one package, records it as a pending purchase, and answers its
     * URL. 404 for an unknown package, 503 when payments are not configured, 502 when Stripe fails.
     */
    async startCheckout(user: UserRow, packageId: string, log: PurchaseLog): Promise<string> {
      const pkg = catalog.findPackage(packageId)
      if (!pkg) throw packageNotFound()
      if (!gateway) throw paymentsNotConfigured()
      const metadata = { user_id: String(user.id), package_id: pkg.id, credits: packageCredits(pkg) }
      let session: { id: string; url: string | null }
      try {
        session = await gateway.createCheckoutSession({
          mode: 'payment',
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: pkg.currency,
                unit_amount: unitAmount(pkg),
                product_data: { name: `${pkg.name}: ${pkg.credits} credits` },
              },
            },
          ],
          client_reference_id: String(user.id),
          customer_email: user.email,
          metadata,
          payment_intent_data: { metadata },
          success_url: `${deps.returnOrigin}/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
          cancel_url: `${deps.returnOrigin}/billing?checkout=cancelled`,
        })
        if (!session.url) throw new Error(`checkout session ${session.id} has no url`)
      } catch (error) {
        log.error({ err: error, user_id: user.id, package_id: pkg.id }, 'stripe checkout failed')
        throw providerFailed()
      }
      await purchases.record({
        userId: user.id,
        checkoutSessionId: session.id,
        packageId: pkg.id,
        credits: packageCredits(pkg),
        amount: unitAmount(pkg),
        currency: pkg.currency,
        createdAt: clock.now(),
      })
      log.info({ checkout_session: session.id, user_id: user.id, package_id: pkg.id }, 'checkout started')
      return session.url
    },

    /**
     * Handles one webhook delivery: 400 unless the signature over the raw body is Stripe's. Each
     * event is handled once, in one transaction with the record of the event and under the buyer's
     * account lock, however often (or however concurrently) Stripe delivers it.
     */
    async handleWebhook(
      rawBody: Buffer,
      signature: string | undefined,
      log: PurchaseLog,
    ): Promise<WebhookOutcome> {
      if (!deps.webhookSecret) throw paymentsNotConfigured()
      let event: StripeEvent
      try {
        event = await verifiedEvent(rawBody, signature ?? '', deps.webhookSecret, clock.nowMs())
      } catch {
        throw badSignature()
      }
      let outcome: WebhookOutcome = 'ignored'
      if (PAID_EVENTS.has(event.type)) outcome = await creditPaidSession(event, log)
      else if (event.type === 'charge.refunded' || DISPUTE_EVENTS.has(event.type)) {
        outcome = await reversePayment(event, log)
      }
      events.emit('PaymentWebhookHandled', { type: event.type, outcome })
      if (outcome !== 'ignored')
        log.info({ event_id: event.id, type: event.type, outcome }, 'stripe webhook handled')
      return outcome
    },
  }
}
