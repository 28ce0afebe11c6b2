import Stripe from 'stripe'
import type { Config } from '../../../config.ts'

export type StripeEvent = Stripe.Event
export type CheckoutSession = Stripe.Checkout.Session

/** Checkout Session creation, the one Stripe API call the service makes. */
export interface StripeGateway {
  createCheckoutSession(
    params: Stripe.Checkout.SessionCreateParams,
  ): Promise<{ id: string; url: string | null }>
}

/**
 * The official SDK on STRIPE_SECRET_KEY, or null when payments are not configured. STRIPE_API_BASE
 * (a test double, a proxy) is split into the SDK's own host/port/protocol options.
 */
export function createStripeGateway(settings: Config['stripe']): StripeGateway | null {
  if (!settings.secretKey) return null
  const base = settings.apiBase ? new URL(settings.apiBase) : null
  const stripe = new Stripe(settings.secretKey, {
    ...(base
      ? {
          host: base.hostname,
          port: base.port || (base.protocol === 'http:' ? 80 : 443),
          protocol: base.protocol === 'http:' ? 'http' : 'https',
        }
      : {}),
    // One retry (the SDK sends an idempotency key, so a retried create makes one session), then fail.
    maxNetworkRetries: 1,
    timeout: 15_000,
    telemetry: false,
  })
  return {
    async createCheckoutSession(params) {
      const session = await stripe.checkout.sessions.create(params)
      return { id: session.id, url: session.url }
    },
  }
}

/**
 * Verifies the `Stripe-Signature` header over the raw body with the webhook secret and parses the
 * event (the SDK's constructEvent, which also refuses a timestamp over 5 minutes from `nowMs`);
 * throws on a bad or missing signature.
 */
export function verifiedEvent(
  rawBody: Buffer,
  signature: string,
  secret: string,
  nowMs: number,
): StripeEvent {
  return Stripe.webhooks.constructEvent(rawBody, signature, secret, undefined, undefined, nowMs)
}
