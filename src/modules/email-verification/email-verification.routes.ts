import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { forbidden } from '../../lib/errors.ts'
import { commonErrorResponses, MessageResponse } from '../../lib/http-schemas.ts'
import { throttleAddress, throttleNetwork } from '../../lib/rate-limit/address.ts'
import { signedInUser, type ThrottleRule } from '../../plugins/guards.ts'
import { VerifyEmailQuery } from './email-verification.schemas.ts'

// Fortify's `throttle:6,1` on the resend route, counted per user so one account cannot flood its inbox.
const resendThrottle: ThrottleRule = {
  name: 'verification-notification',
  max: 6,
  decaySeconds: 60,
  key: (request) => (request.user ? String(request.user.id) : throttleAddress(request.ip)),
  networkKey: (request) => (request.user ? undefined : throttleNetwork(request.ip)),
}

/** The signed verification link and its resend, under the spec's paths. */
export default async function emailVerificationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { verification } = app.services
  const tags = ['auth']

  // Public: the link proves itself by its signature, so it works in whichever browser opens the mail.
  app.get(
    '/api/email/verify',
    {
      // Laravel's `signed` middleware runs before validation: a link without a signature is a 403.
      preValidation: async (request) => {
        const { signature } = request.query as { signature?: unknown }
        if (typeof signature !== 'string' || signature === '') throw forbidden('Invalid signature.')
      },
      schema: {
        tags,
        querystring: VerifyEmailQuery,
        response: { 200: MessageResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      await verification.verify(request.url, request.query)
      return { message: 'Email verified.' }
    },
  )

  app.post(
    '/api/user-profile/email/verification-notification',
    {
      config: { auth: 'session', throttle: resendThrottle },
      schema: { tags, response: { 200: MessageResponse, ...commonErrorResponses } },
    },
    async (request) => {
      const sent = await verification.sendLink(signedInUser(request))
      return { message: sent ? 'Verification link sent.' : 'Email already verified.' }
    },
  )
}
