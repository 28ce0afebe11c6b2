import { and, count, eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { SPA_ORIGIN, type TestApp } from '../../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { createUser, signedInClient } from '../../../../test/helpers/factories.ts'
import { checkoutEvent, signatureFor } from '../../../../test/helpers/fake-stripe.ts'
import { appUnderTest, fakeStripeUnderTest } from '../../../../test/helpers/under-test.ts'
import { creditTransactions, paymentEvents } from '../../../db/schema/index.ts'

const SECRET_KEY = 'sk_test_fake_key_for_tests'
const WEBHOOK_SECRET = 'whsec_test_secret_for_tests'
const WEBHOOK = '/payments/buy-credits/webhook'

const stripe = fakeStripeUnderTest()
const t = appUnderTest(() => ({
  env: {
    STRIPE_SECRET_KEY: SECRET_KEY,
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_BASE: stripe.url,
  },
}))

/** Posts a webhook delivery as Stripe does: raw JSON, no cookies, no CSRF token. */
async function deliver(app: TestApp, payload: string, signature?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' }
  if (signature !== undefined) headers['stripe-signature'] = signature
  const res = await fetch(`${app.baseUrl}${WEBHOOK}`, { method: 'POST', headers, body: payload })
  const text = await res.text()
  return { status: res.status, data: text ? JSON.parse(text) : null }
}

const signed = (payload: string) => signatureFor(payload, WEBHOOK_SECRET)

// config/billing.json's prices, in cents, as Checkout charges them.
const PRICES: Record<string, number> = { starter: 900, pro: 4900, desk: 9900 }

/** A paid checkout.session.completed event for `userId` buying `packageId`, at its price. */
const paidEvent = (userId: number, packageId = 'starter', extra: Parameters<typeof checkoutEvent>[0] = {}) =>
  checkoutEvent({
    metadata: { user_id: String(userId), package_id: packageId },
    clientReferenceId: String(userId),
    amountTotal: PRICES[packageId] ?? 100,
    currency: 'usd',
    ...extra,
  })

const purchases = async (userId: number) =>
  t.database.db
    .select()
    .from(creditTransactions)
    .where(and(eq(creditTransactions.userId, userId), eq(creditTransactions.kind, 'purchase')))

/** The Checkout Session creation the fake Stripe received last. */
function lastSession() {
  const request = stripe.sessions().at(-1)
  if (!request) throw new Error('no checkout session was created')
  return request
}

const balanceOf = async (client: TestClient) => (await client.get('/api/credits')).data.available_credits

describe('GET /buy-credits/{package}', () => {
  it('creates a Checkout Session for the package and redirects (303) to its URL', async () => {
    const { client, user } = await signedInClient(t)
    const before = stripe.sessions().length
    const res = await client.get('/buy-credits/pro')
    expect(res.status).toBe(303)
    const sent = stripe.sessions()
    expect(sent).toHaveLength(before + 1)
    const request = lastSession()
    expect(request.headers.authorization).toBe(`Bearer ${SECRET_KEY}`)
    expect(request.form).toMatchObject({
      mode: 'payment',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '4900',
      'line_items[0][price_data][product_data][name]': 'Pro: 600 credits',
      'metadata[user_id]': String(user.id),
      'metadata[package_id]': 'pro',
      'metadata[credits]': '600',
      client_reference_id: String(user.id),
      customer_email: user.email,
      success_url: `${SPA_ORIGIN}/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${SPA_ORIGIN}/billing?checkout=cancelled`,
    })
    expect(res.headers.get('location')).toMatch(
      /^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_[0-9a-f]+$/,
    )
    // Starting a checkout credits nothing.
    expect(await balanceOf(client)).toBe(0)
  })

  it('answers 404 {message} for an unknown package, without calling Stripe', async () => {
    const { client } = await signedInClient(t)
    const before = stripe.requests.length
    for (const name of ['platinum', 'PRO', 'a'.repeat(65), '%2E%2E']) {
      const res = await client.get(`/buy-credits/${name}`)
      expect(res.status, name).toBe(404)
      expect(typeof res.data.message).toBe('string')
    }
    expect((await client.get('/buy-credits/platinum')).data).toEqual({ message: 'Credit package not found.' })
    expect(stripe.requests.length).toBe(before)
  })

  it('answers 401 to a guest, without calling Stripe', async () => {
    const before = stripe.requests.length
    const res = await new TestClient(t.baseUrl).get('/buy-credits/starter')
    expect(res).toMatchObject({ status: 401, data: { message: 'Unauthenticated.' } })
    expect(stripe.requests.length).toBe(before)
  })

  it('allows 10 checkouts a minute per user, then 429 without calling Stripe; HEAD creates nothing', async () => {
    const { client } = await signedInClient(t)
    const other = await signedInClient(t)
    const before = stripe.sessions().length
    for (let i = 0; i < 10; i++) expect((await client.get('/buy-credits/starter')).status).toBe(303)
    const refused = await client.get('/buy-credits/starter')
    expect(refused).toMatchObject({ status: 429, data: { message: 'Too Many Attempts.' } })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(stripe.sessions().length).toBe(before + 10)
    // Another user has a counter of their own; a minute later the first may buy again.
    expect((await other.client.get('/buy-credits/starter')).status).toBe(303)
    t.clock.advance(61_000)
    expect((await client.get('/buy-credits/starter')).status).toBe(303)
    expect((await client.request('HEAD', '/buy-credits/starter')).status).toBe(405)
    expect(stripe.sessions().length).toBe(before + 12)
  })

  it('answers 502 {message} when Stripe fails (after one retry), and credits nothing', async () => {
    const { client } = await signedInClient(t)
    const before = stripe.requests.length
    stripe.failNext(500, 2)
    const res = await client.get('/buy-credits/starter')
    expect(res.status).toBe(502)
    expect(res.data).toEqual({
      message: 'The payment provider could not start the checkout. Please try again.',
    })
    expect(stripe.requests.length).toBe(before + 2)
    expect(await balanceOf(client)).toBe(0)
  })
})

describe(`POST ${WEBHOOK}`, () => {
  it('credits a paid checkout session once, as a purchase referencing the session, without a CSRF token', async () => {
    const { client, user } = await signedInClient(t)
    const event = paidEvent(user.id, 'starter')
    const res = await deliver(t, event.payload, signed(event.payload))
    expect(res).toEqual({ status: 200, data: { received: true } })
    expect(await balanceOf(client)).toBe(100)
    const [row] = (await client.get('/api/transaction-history')).data.data
    expect(row).toMatchObject({
      kind: 'purchase',
      amount: 100,
      balance_after: 100,
      reference: event.sessionId,
    })
  })

  it('the whole purchase: the session the app started is credited with the credits recorded at checkout', async () => {
    const { client, user } = await signedInClient(t)
    await client.get('/buy-credits/desk')
    const { form } = lastSession()
    const metadata = {
      user_id: String(form['metadata[user_id]']),
      package_id: String(form['metadata[package_id]']),
      credits: String(form['metadata[credits]']),
    }
    expect(metadata).toEqual({ user_id: String(user.id), package_id: 'desk', credits: '1500' })
    const started = stripe.createdSessions.at(-1)
    const event = checkoutEvent({
      sessionId: started?.id,
      metadata,
      clientReferenceId: String(user.id),
      amountTotal: 9900,
      currency: 'usd',
    })
    expect((await deliver(t, event.payload, signed(event.payload))).status).toBe(200)
    expect(await balanceOf(client)).toBe(1500)
  })

  it('credits what was recorded at checkout, not what the catalog says now', async () => {
    const { client, user } = await signedInClient(t)
    const event = paidEvent(user.id, 'pro', {
      metadata: { user_id: String(user.id), package_id: 'pro', credits: '550.5' },
    })
    expect((await deliver(t, event.payload, signed(event.payload))).status).toBe(200)
    expect(await balanceOf(client)).toBe(550.5)
  })

  it.each([
    ['no signature', (): string | undefined => undefined],
    ['an empty signature', () => ''],
    [
      'a signature made with another secret',
      (payload: string) => signatureFor(payload, 'whsec_someone_else'),
    ],
    ['a signature over another body', (payload: string) => signed(`${payload} `)],
    [
      'a signature older than 5 minutes',
      (payload: string) => signatureFor(payload, WEBHOOK_SECRET, Math.floor(Date.now() / 1000) - 600),
    ],
    ['a garbled header', () => 't=abc,v1=zzz'],
  ] as [string, (payload: string) => string | undefined][])(
    'refuses %s with 400 {message}, and credits nothing',
    async (_label, sign) => {
      const { client, user } = await signedInClient(t)
      const event = paidEvent(user.id)
      const res = await deliver(t, event.payload, sign(event.payload))
      expect(res).toEqual({ status: 400, data: { message: 'Invalid Stripe signature.' } })
      expect(await balanceOf(client)).toBe(0)
      const handled = await t.database.db.select().from(paymentEvents).where(eq(paymentEvents.id, event.id))
      expect(handled).toEqual([])
    },
  )

  it('credits an event delivered 3 more times once', async () => {
    const { client, user } = await signedInClient(t)
    const event = paidEvent(user.id, 'pro')
    for (let i = 0; i < 4; i++) {
      expect(await deliver(t, event.payload, signed(event.payload))).toEqual({
        status: 200,
        data: { received: true },
      })
    }
    expect(await balanceOf(client)).toBe(600)
    expect(await purchases(user.id)).toHaveLength(1)
  })

  it('credits a session once even when Stripe sends it under a second event id', async () => {
    const { client, user } = await signedInClient(t)
    const first = paidEvent(user.id, 'pro')
    const second = paidEvent(user.id, 'pro', { sessionId: first.sessionId })
    expect(second.id).not.toBe(first.id)
    expect((await deliver(t, first.payload, signed(first.payload))).status).toBe(200)
    expect(await deliver(t, second.payload, signed(second.payload))).toEqual({
      status: 200,
      data: { received: true },
    })
    expect(await balanceOf(client)).toBe(600)
    expect(await purchases(user.id)).toHaveLength(1)
    // Both deliveries are recorded as handled.
    const handled = await t.database.db
      .select({ n: count() })
      .from(paymentEvents)
      .where(eq(paymentEvents.checkoutSessionId, first.sessionId))
    expect(handled[0]?.n).toBe(2)
  })

  it('credits once when 10 deliveries of one event, and 10 of another event for the same session, race', async () => {
    const { client, user } = await signedInClient(t)
    const event = paidEvent(user.id, 'starter')
    const twin = paidEvent(user.id, 'starter', { sessionId: event.sessionId })
    const answers = await Promise.all(
      [...Array(10).fill(event), ...Array(10).fill(twin)].map((e: typeof event) =>
        deliver(t, e.payload, signed(e.payload)),
      ),
    )
    expect(answers.every((a) => a.status === 200 && a.data.received === true)).toBe(true)
    expect(await balanceOf(client)).toBe(100)
    expect(await purchases(user.id)).toHaveLength(1)
  })

  it('answers 200 to other events and to unpaid sessions, crediting nothing; a later async payment credits', async () => {
    const { client, user } = await signedInClient(t)
    const unrelated = checkoutEvent({
      type: 'payment_intent.succeeded',
      metadata: { user_id: String(user.id), package_id: 'pro' },
    })
    expect(await deliver(t, unrelated.payload, signed(unrelated.payload))).toEqual({
      status: 200,
      data: { received: true },
    })
    const unpaid = paidEvent(user.id, 'pro', { paymentStatus: 'unpaid' })
    expect((await deliver(t, unpaid.payload, signed(unpaid.payload))).status).toBe(200)
    expect(await balanceOf(client)).toBe(0)

    const paidLater = paidEvent(user.id, 'pro', {
      type: 'checkout.session.async_payment_succeeded',
      sessionId: unpaid.sessionId,
    })
    expect((await deliver(t, paidLater.payload, signed(paidLater.payload))).status).toBe(200)
    expect(await balanceOf(client)).toBe(600)
  })

  it('answers 200 and credits nobody for a session that names no user of ours or no package', async () => {
    const { user } = await createUser(t.database.db)
    for (const metadata of [
      { user_id: '987654321', package_id: 'pro' },
      { user_id: String(user.id), package_id: 'platinum' },
      { user_id: 'someone', package_id: 'pro' },
      {},
    ] as Record<string, string>[]) {
      const event = checkoutEvent({ metadata })
      expect(await deliver(t, event.payload, signed(event.payload)), JSON.stringify(metadata)).toEqual({
        status: 200,
        data: { received: true },
      })
    }
    expect(await purchases(user.id)).toEqual([])
  })
})

describe('payments not configured', () => {
  const bare = appUnderTest()

  it('GET /buy-credits/{package} answers 503 with a clear message (an unknown package is still a 404)', async () => {
    const { client } = await signedInClient(bare)
    expect(await client.get('/buy-credits/starter')).toMatchObject({
      status: 503,
      data: { message: 'Payments are not configured.' },
    })
    expect((await client.get('/buy-credits/platinum')).status).toBe(404)
  })

  it('the webhook answers 503 and credits nothing', async () => {
    const { user } = await createUser(bare.database.db)
    const event = paidEvent(user.id)
    const res = await deliver(bare, event.payload, signed(event.payload))
    expect(res).toEqual({ status: 503, data: { message: 'Payments are not configured.' } })
    const rows = await bare.database.db
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.userId, user.id))
    expect(rows).toEqual([])
  })
})
