import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { signedInUser } from '../../plugins/guards.ts'
import { ChannelAuthBody, ChannelAuthResponse } from './realtime.schemas.ts'
import triggerRoutes from './trigger.routes.ts'

/** Channel authorization for the app's Echo client, chat broadcasts, and the trigger API. */
export default async function realtimeRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { channels } = app.services

  // Laravel's Broadcast::routes() (and the /api twin Sanctum SPAs use): no CSRF check, as there;
  // the SameSite=Lax session cookie and the CORS allowlist keep other sites out.
  for (const url of ['/broadcasting/auth', '/api/broadcasting/auth']) {
    app.post(
      url,
      {
        config: { auth: 'session', csrf: false },
        schema: {
          tags: ['real-time'],
          summary: 'Sign a socket’s subscription to a private or presence channel (form or JSON body)',
          body: ChannelAuthBody,
          response: { 200: ChannelAuthResponse, ...commonErrorResponses },
        },
      },
      async (request) => {
        const user = signedInUser(request)
        const answer = await channels.authorize(user, request.body)
        // The socket's instance (maybe another) records who authorized it, so the subscription can
        // end with their access. Told before the answer: the subscribe frame comes after it.
        await app.realtime.hub.grant({
          socketId: request.body.socket_id,
          channel: request.body.channel_name,
          userId: String(user.id),
          sessionId: request.session?.row.id ?? '',
        })
        return answer
      },
    )
  }

  await app.register(triggerRoutes, { config })
}
