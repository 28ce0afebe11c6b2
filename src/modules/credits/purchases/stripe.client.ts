import type Stripe from 'stripe'
import type { Config } from '../../../config.ts'

// The SDK (over 200 modules) is loaded by the first payment call, not at every start.
const loadStripe = async () => (await import('stripe')).default

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
  const { secretKey, apiBase } = settings
  if (!secretKey) return null
  const base = apiBase ? new URL(apiBase) : null
  let client: Promise<Stripe> | undefined
  const connect = async () => {
    const StripeSdk = await loadStripe()
    return new StripeSdk(secretKey, {
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
  }
  return {
    async createCheckoutSession(params) {
      client ??= connect()
      const session = await (await client).checkout.sessions.create(params)
      return { id: session.id, url: session.url }
    },
  }
}

/**
 * Verifies the `Stripe-Signature` header over the raw body with the webhook secret and parses the
 * event (the SDK's constructEvent, which also refuses a timestamp over 5 minutes from `nowMs`);
 * throws on a bad or missing signature.
 */
export async function verifiedEvent(
  rawBody: Buffer,
  signature: string,
  secret: string,
  nowMs: number,
): Promise<StripeEvent> {
  const StripeSdk = await loadStripe()
  return StripeSdk.webhooks.constructEvent(rawBody, signature, secret, undefined, undefined, nowMs)
}
