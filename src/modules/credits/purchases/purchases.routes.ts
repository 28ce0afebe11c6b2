import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { commonErrorResponses } from '../../../lib/http-schemas.ts'
import { signedInUser, type ThrottleRule } from '../../../plugins/guards.ts'
import { BuyCreditsParams, WebhookResponse } from './purchases.schemas.ts'

// Each visit creates a Checkout Session at Stripe: a person needs a few, a loop would spend the
// account's Stripe rate limit for everyone.
const checkoutThrottle: ThrottleRule = {
  name: 'buy-credits',
  max: 10,
  decaySeconds: 60,
  key: (request) => `user:${request.user?.id}`,
}

// Stripe's events are a few KiB; this leaves room without reading megabytes before the signature check.
const WEBHOOK_BODY_LIMIT = 256 * 1024

/** The web routes of buying credits: start a Stripe Checkout, and Stripe's webhook. */
export default async function purchasesRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { purchases } = app.services
  const tags = ['billing']

  // The signature covers the exact bytes Stripe sent, so this plugin (only) keeps every body raw.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))

  app.get(
    '/buy-credits/:package',
    {
      // A HEAD (a link checker, a prefetch) must not create a Checkout Session.
      exposeHeadRoute: false,
      config: { auth: 'session', throttle: checkoutThrottle },
      schema: {
        tags,
        summary: 'Start buying a credit package: redirects (303) to Stripe Checkout',
        params: BuyCreditsParams,
        response: {
          303: Type.Null({ description: 'Redirect to the Checkout Session URL (Location header).' }),
          ...commonErrorResponses,
        },
      },
    },
    async (request, reply) => {
      const url = await purchases.startCheckout(signedInUser(request), request.params.package, request.log)
      return reply.redirect(url, 303)
    },
  )

  app.post(
    '/payments/buy-credits/webhook',
    {
      bodyLimit: WEBHOOK_BODY_LIMIT,
      // Stripe cannot hold a CSRF token; the signature check below is what authenticates it.
      config: { csrf: false },
      schema: {
        tags,
        summary: "Stripe's webhook (Stripe-Signature over the raw JSON body)",
        response: { 200: WebhookResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
      const signature = request.headers['stripe-signature']
      await purchases.handleWebhook(raw, typeof signature === 'string' ? signature : undefined, request.log)
      return { received: true as const }
    },
  )
}
