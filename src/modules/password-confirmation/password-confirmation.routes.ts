import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { signedInUser } from '../../plugins/guards.ts'
import { currentPasswordThrottle } from '../users/users.throttles.ts'
import {
  ConfirmationStatusQuery,
  ConfirmationStatusResponse,
  ConfirmedResponse,
  ConfirmPasswordBody,
} from './password-confirmation.schemas.ts'

/** Fortify's password confirmation: confirming it, and asking whether it was lately. */
export default async function passwordConfirmationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { users } = app.services
  const tags = ['auth']

  app.post(
    '/api/user/confirm-password',
    {
      // Counted with every other check of the current password, per user: a stolen session cannot guess it.
      config: { auth: 'session', throttle: currentPasswordThrottle },
      schema: {
        tags,
        body: ConfirmPasswordBody,
        response: { 201: ConfirmedResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) => {
      // Fortify's FailedPasswordConfirmationResponse: a 422 on `password` with its own wording.
      await users.confirmPassword(
        signedInUser(request),
        request.body.password,
        'password',
        'The provided password was incorrect.',
      )
      await app.passwordConfirmation.record(request)
      return reply.code(201).type('application/json; charset=utf-8').send('""')
    },
  )

  app.get(
    '/api/user/confirmed-password-status',
    {
      config: { auth: 'session' },
      schema: {
        tags,
        querystring: ConfirmationStatusQuery,
        response: { 200: ConfirmationStatusResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ confirmed: app.passwordConfirmation.isRecent(request, request.query.seconds) }),
  )
}
