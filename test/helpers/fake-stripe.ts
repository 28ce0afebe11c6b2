import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Stripe from 'stripe'

export interface RecordedStripeRequest {
  method: string
  path: string
  headers: IncomingHttpHeaders
  /** The form-encoded body as Stripe's bracket keys: `line_items[0][price_data][currency]` -> `usd`. */
  form: Record<string, string>
}

/**
 * A real HTTP stand-in for the Stripe API on a loopback port: answers `POST /v1/checkout/sessions`
 * with a plausible Checkout Session and records every request. Point the app at it with
 * `STRIPE_API_BASE: fake.url`. `failNext(status)` makes the next requests fail as Stripe would.
 */
export class FakeStripe {
  readonly requests: RecordedStripeRequest[] = []
  /** The Checkout Sessions answered, in order (what the app recorded at checkout). */
  readonly createdSessions: ReturnType<typeof checkoutSession>[] = []
  private server: Server | null = null
  private failures: number[] = []

  get url(): string {
    const address = this.server?.address() as AddressInfo | undefined
    if (!address) throw new Error('the fake Stripe is not started')
    return `http://127.0.0.1:${address.port}`
  }

  /** The next `times` requests answer `status` with a Stripe error body. */
  failNext(status: number, times = 1): void {
    for (let i = 0; i < times; i++) this.failures.push(status)
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0] ?? '/'
        const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')))
        this.requests.push({ method: req.method ?? 'GET', path, headers: req.headers, form })
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${hex(8)}` })
          res.end(JSON.stringify(body))
        }
        const failure = this.failures.shift()
        if (failure !== undefined) {
          return send(failure, {
            error: { type: 'api_error', message: 'The fake Stripe failed on purpose.' },
          })
        }
        if (req.method === 'POST' && path === '/v1/checkout/sessions') {
          const session = checkoutSession(form)
          this.createdSessions.push(session)
          return send(200, session)
        }
        send(404, {
          error: { type: 'invalid_request_error', message: `Unrecognized request URL (${path}).` },
        })
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    this.server = server
    return this
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = null
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** Checkout Session creations so far. */
  sessions(): RecordedStripeRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path === '/v1/checkout/sessions')
  }
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex')

/** What Stripe answers to a session create, from the form it was sent. */
function checkoutSession(form: Record<string, string>) {
  const id = `cs_test_${hex(12)}`
  const metadata: Record<string, string> = {}
  for (const [key, value] of Object.entries(form)) {
    const match = /^metadata\[(.+)\]$/.exec(key)
    if (match?.[1]) metadata[match[1]] = value
  }
  const amount = Number(form['line_items[0][price_data][unit_amount]'] ?? 0)
  return {
    id,
    object: 'checkout.session',
    amount_subtotal: amount,
    amount_total: amount,
    client_reference_id: form.client_reference_id ?? null,
    currency: form['line_items[0][price_data][currency]'] ?? null,
    customer_email: form.customer_email ?? null,
    livemode: false,
    metadata,
    mode: form.mode ?? 'payment',
    payment_status: 'unpaid',
    status: 'open',
    success_url: form.success_url ?? null,
    cancel_url: form.cancel_url ?? null,
    url: `https://checkout.stripe.com/c/pay/${id}`,
  }
}

export interface CheckoutEventOptions {
  eventId?: string
  type?: string
  sessionId?: string
  paymentStatus?: string
  metadata?: Record<string, string>
  clientReferenceId?: string | null
  /** What was paid, in the currency's minor unit (absent unless given, as on a free session). */
  amountTotal?: number
  currency?: string
  paymentIntent?: string
}

/** A Stripe event about a Checkout Session, as JSON text, the way Stripe posts it to a webhook. */
export function checkoutEvent(options: CheckoutEventOptions = {}): {
  id: string
  sessionId: string
  payload: string
} {
  const sessionId = options.sessionId ?? `cs_test_${hex(12)}`
  const { id, payload } = stripeEvent(
    options.type ?? 'checkout.session.completed',
    {
      id: sessionId,
      object: 'checkout.session',
      mode: 'payment',
      status: 'complete',
      payment_status: options.paymentStatus ?? 'paid',
      client_reference_id: options.clientReferenceId ?? null,
      metadata: options.metadata ?? {},
      amount_total: options.amountTotal ?? null,
      currency: options.currency ?? null,
      payment_intent: options.paymentIntent ?? `pi_${hex(12)}`,
    },
    options.eventId,
  )
  return { id, sessionId, payload }
}

/** Any Stripe event about `object`, as JSON text, the way Stripe posts it to a webhook. */
export function stripeEvent(type: string, object: Record<string, unknown>, eventId?: string) {
  const id = eventId ?? `evt_${hex(12)}`
  const payload = JSON.stringify({
    id,
    object: 'event',
    api_version: '2025-01-27.acacia',
    created: Math.floor(Date.now() / 1000),
    livemode: false,
    pending_webhooks: 1,
    type,
    data: { object },
  })
  return { id, payload }
}

export interface RefundEventOptions {
  paymentIntent: string
  /** The charge's amount and how much of it is refunded so far (Stripe's running total). */
  amount: number
  amountRefunded: number
  currency?: string
  refundId?: string
  eventId?: string
}

/** `charge.refunded`: the charge with its running refunded total and its newest refund first. */
export function refundEvent(options: RefundEventOptions) {
  const refundId = options.refundId ?? `re_${hex(12)}`
  const currency = options.currency ?? 'usd'
  return {
    refundId,
    ...stripeEvent(
      'charge.refunded',
      {
        id: `ch_${hex(12)}`,
        object: 'charge',
        amount: options.amount,
        amount_refunded: options.amountRefunded,
        currency,
        paid: true,
        refunded: options.amountRefunded >= options.amount,
        payment_intent: options.paymentIntent,
        refunds: {
          object: 'list',
          data: [
            { id: refundId, object: 'refund', amount: options.amountRefunded, currency, status: 'succeeded' },
          ],
          has_more: false,
        },
      },
      options.eventId,
    ),
  }
}

export interface DisputeEventOptions {
  type: 'charge.dispute.created' | 'charge.dispute.closed'
  paymentIntent: string
  amount: number
  currency?: string
  /** created: `needs_response` unless given; closed: `won`, `lost` or `warning_closed`. */
  status?: string
  disputeId?: string
  eventId?: string
}

/** `charge.dispute.created` or `charge.dispute.closed` about one dispute of the PaymentIntent's charge. */
export function disputeEvent(options: DisputeEventOptions) {
  const disputeId = options.disputeId ?? `dp_${hex(12)}`
  return {
    disputeId,
    ...stripeEvent(
      options.type,
      {
        id: disputeId,
        object: 'dispute',
        amount: options.amount,
        currency: options.currency ?? 'usd',
        charge: `ch_${hex(12)}`,
        payment_intent: options.paymentIntent,
        reason: 'fraudulent',
        status: options.status ?? 'needs_response',
      },
      options.eventId,
    ),
  }
}

/** The `Stripe-Signature` header for `payload`, made by the SDK's own test helper. */
export const signatureFor = (payload: string, secret: string, timestamp?: number): string =>
  Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp })

/**
 * Posts a signed webhook delivery to the app as Stripe does: raw JSON, no cookies, no CSRF token;
 * signed at `timestamp` (Unix seconds; now by default), which an app on a moved clock needs.
 */
export async function deliverWebhook(
  baseUrl: string,
  payload: string,
  secret: string,
  timestamp?: number,
): Promise<{ status: number; data: unknown }> {
  const res = await fetch(`${baseUrl}/payments/buy-credits/webhook`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'stripe-signature': signatureFor(payload, secret, timestamp),
    },
    body: payload,
  })
  return { status: res.status, data: await res.json() }
}

/** The user starts a checkout of `packageId` in the app (GET /buy-credits/{package}); answers the session made. */
export async function startCheckoutIn(
  stripe: FakeStripe,
  client: { get(path: string): Promise<{ status: number }> },
  packageId: string,
): Promise<{ sessionId: string; metadata: Record<string, string>; amount: number }> {
  const res = await client.get(`/buy-credits/${packageId}`)
  if (res.status !== 303) throw new Error(`checkout of ${packageId} answered ${res.status}`)
  const session = stripe.createdSessions.at(-1)
  if (!session) throw new Error('no checkout session was created')
  return { sessionId: session.id, metadata: session.metadata, amount: session.amount_total }
}
