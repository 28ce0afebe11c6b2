import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses, MessageResponse } from '../../lib/http-schemas.ts'
import { createPeriodicTask } from '../../lib/periodic.ts'
import { throttleAddress, throttleNetwork } from '../../lib/rate-limit/address.ts'
import { bodyText } from '../../lib/validation.ts'
import type { ThrottleRule } from '../../plugins/guards.ts'
import { ForgotPasswordBody, ResetPasswordBody } from './password-reset.schemas.ts'
import { RESET_LINK_JOB } from './password-reset.service.ts'

// 6 a minute per address, counted before anyone looks the address up: a throttled known email gets
// the very 429 an unknown one gets, and nobody can flood one inbox by rotating IPs.
const forgotThrottle: ThrottleRule = {
  name: 'password-email',
  max: 6,
  decaySeconds: 60,
  // Read before validation: a crafted email (an object, say) counts as none and goes on to its 422.
  key: (request) => bodyText(request.body, 'email').trim().toLowerCase(),
}

// Mail bombing: one address asking links for many inboxes, each within its own 6 a minute. Counted
// per client address once the body is valid; 20 an hour is more than one office forgets.
const forgotPerClientThrottle: ThrottleRule = {
  name: 'password-email-client',
  max: 20,
  decaySeconds: 3600,
  key: (request) => throttleAddress(request.ip),
  networkKey: (request) => throttleNetwork(request.ip),
}

/** How often unusable reset tokens (expired, or of no account) are deleted, and once at start. */
export const RESET_TOKEN_PRUNE_EVERY_MS = 60 * 60_000

/** Fortify's forgot-password and reset-password, under the spec's paths. */
export default async function passwordResetRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { passwordReset } = app.services
  const tags = ['auth']
  // Forgot-password's work (look-up, token, mail) runs after its answer, wherever the outbox runs it.
  app.outbox.handle(RESET_LINK_JOB, (payload) => passwordReset.issueLink(payload))
  const pruner = createPeriodicTask(() => passwordReset.prune(), {
    everyMs: RESET_TOKEN_PRUNE_EVERY_MS,
    onError: (err) => app.log.warn({ err }, 'password reset: pruning tokens failed'),
  })
  app.addHook('onReady', async () => pruner.start())
  app.addHook('preClose', async () => pruner.stop())
  const response = { 200: MessageResponse, ...commonErrorResponses }

  app.post(
    '/api/password/email',
    { config: { throttle: forgotThrottle }, schema: { tags, body: ForgotPasswordBody, response } },
    async (request) => {
      await app.rateLimiter.enforce(forgotPerClientThrottle, request)
      await passwordReset.requestLink(request.body.email)
      return { message: 'We have emailed your password reset link.' }
    },
  )

  app.post(
    '/api/password/reset',
    { schema: { tags, body: ResetPasswordBody, response } },
    async (request) => {
      const user = await passwordReset.reset(request.body)
      // Reset from a browser signed in as that very user: it gets a fresh guest session, not a dead one.
      if (request.user?.id === user.id) await app.sessionControl.signOut(request)
      return { message: 'Your password has been reset.' }
    },
  )
}
