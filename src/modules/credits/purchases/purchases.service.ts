import type { UserRow } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { toCreditString } from '../../../lib/decimal.ts'
import { HttpError, notFound } from '../../../lib/errors.ts'
import type { UsersService } from '../../users/users.service.ts'
import { type BillingCatalog, packageCredits, unitAmount } from '../billing.catalog.ts'
import { createBillingRepository } from '../billing.repository.ts'
import type { LedgerService } from '../ledger.service.ts'
import { type CheckoutSession, type StripeEvent, type StripeGateway, verifiedEvent } from './stripe.client.ts'

/** What the service reports about what it did; the caller logs it (no Fastify types here). */
export interface PurchaseLog {
  info(details: Record<string, unknown>, message: string): void
  error(details: Record<string, unknown>, message: string): void
}

export interface PurchasesDeps {
  clock: Clock
  catalog: BillingCatalog
  ledger: LedgerService
  users: UsersService
  /** Null when STRIPE_SECRET_KEY is not set. */
  gateway: StripeGateway | null
  webhookSecret: string | undefined
  /** Where Checkout sends the buyer back: the SPA (first FRONTEND_URL origin) or APP_URL. */
  returnOrigin: string
}

export type WebhookOutcome = 'credited' | 'duplicate' | 'ignored'

// The events that say a Checkout Session was paid: at once (card), or later (bank debits and the like).
const PAID_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded'])

const paymentsNotConfigured = () => new HttpError(503, 'Payments are not configured.')
const packageNotFound = () => notFound('Credit package not found.')
const badSignature = () => new HttpError(400, 'Invalid Stripe signature.')
const providerFailed = () =>
  new HttpError(502, 'The payment provider could not start the checkout. Please try again.')

interface Purchase {
  userId: number
  packageId: string
  credits: string
}

/**
 * Who bought what, from the session's metadata (ours, set at checkout, and signed into the event):
 * the credits recorded then win over today's catalog, so a price change never alters a paid order.
 */
function purchaseOf(session: CheckoutSession, catalog: BillingCatalog): Purchase | null {
  const metadata = session.metadata ?? {}
  const userId = Number(metadata.user_id ?? session.client_reference_id)
  const packageId = metadata.package_id
  if (!Number.isSafeInteger(userId) || userId < 1 || !packageId) return null
  const recorded = metadata.credits ? toCreditString(Number(metadata.credits)) : null
  const pkg = catalog.findPackage(packageId)
  const credits = recorded && Number(recorded) > 0 ? recorded : pkg ? packageCredits(pkg) : null
  return credits ? { userId, packageId, credits } : null
}

/** Buying credits with Stripe Checkout: start a checkout, and credit it when Stripe says it is paid. */
export function createPurchasesService(deps: PurchasesDeps) {
  const { clock, catalog, ledger, users, gateway } = deps

  return {
    /**
     * Creates a Checkout Session for one package and answers its URL. 404 for an unknown package,
     * 503 when payments are not configured, 502 when Stripe fails.
     */
    async startCheckout(user: UserRow, packageId: string, log: PurchaseLog): Promise<string> {
      const pkg = catalog.findPackage(packageId)
      if (!pkg) throw packageNotFound()
      if (!gateway) throw paymentsNotConfigured()
      const metadata = { user_id: String(user.id), package_id: pkg.id, credits: packageCredits(pkg) }
      try {
        const session = await gateway.createCheckoutSession({
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
        log.info({ checkout_session: session.id, user_id: user.id, package_id: pkg.id }, 'checkout started')
        return session.url
      } catch (error) {
        log.error({ err: error, user_id: user.id, package_id: pkg.id }, 'stripe checkout failed')
        throw providerFailed()
      }
    },

    /**
     * Handles one webhook delivery: 400 unless the signature over the raw body is Stripe's. A paid
     * Checkout Session is credited once per event id and once per session, in one transaction with
     * the record of the event, however often (or however concurrently) Stripe delivers it.
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
      if (!PAID_EVENTS.has(event.type)) return 'ignored'
      const session = event.data.object as CheckoutSession
      if (session.object !== 'checkout.session' || session.payment_status !== 'paid') return 'ignored'
      const purchase = purchaseOf(session, catalog)
      // Not ours to credit (another integration's session, or a user since deleted): retrying cannot
      // help, so Stripe gets its 200 and the log keeps the trace.
      if (!purchase || !(await users.findById(purchase.userId))) {
        log.error({ event_id: event.id, checkout_session: session.id }, 'paid checkout session not credited')
        return 'ignored'
      }
      const outcome = await ledger.withLockedAccount(purchase.userId, async (tx) => {
        const billing = createBillingRepository({ db: tx })
        const fresh = await billing.recordPaymentEvent({
          id: event.id,
          type: event.type,
          checkoutSessionId: session.id,
          createdAt: clock.now(),
        })
        // The account lock orders every delivery for this user, so this check cannot race; the
        // unique purchase reference backs it anyway.
        if (!fresh || (await billing.purchaseCredited(session.id))) return 'duplicate' as const
        await ledger.append(tx, {
          userId: purchase.userId,
          amount: purchase.credits,
          kind: 'purchase',
          reference: session.id,
          reason: `Stripe Checkout: package ${purchase.packageId}`,
        })
        return 'credited' as const
      })
      log.info(
        { event_id: event.id, checkout_session: session.id, user_id: purchase.userId, outcome },
        'stripe webhook handled',
      )
      return outcome
    },
  }
}
