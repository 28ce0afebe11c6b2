import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Config } from '../../config.ts'
import { HttpError, ValidationError } from '../../lib/errors.ts'
import { commonErrorResponses } from '../../lib/http-schemas.ts'
import { md5, validRequestSignature } from '../../lib/realtime/signatures.ts'
import {
  AppParams,
  BatchBody,
  ChannelParams,
  ChannelResponse,
  ChannelsResponse,
  EmptyResponse,
  SignedQuery,
  TriggerBody,
  UsersResponse,
} from './trigger.schemas.ts'

const MAX_CHANNELS = 100
const MAX_DATA_BYTES = 10 * 1024
const MAX_BATCH = 10
// Neither Reverb nor soketi checks how old a signature is; a captured request replays for 10 minutes at most.
const MAX_SIGNATURE_AGE_SECONDS = 600

declare module 'fastify' {
  interface FastifyRequest {
    /** The body as received, for `body_md5`. */
    rawBody?: string
  }
}

const invalidSignature = () => new HttpError(401, 'Authentication signature invalid.')
const tooLarge = (what: string) => new HttpError(413, what)

/**
 * Pusher's HTTP API, as the trading engine (or any Pusher server SDK) publishes: events, batches,
 * and what is occupied. Every request is signed with the app's secret.
 */
export default async function triggerRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { appId, key, secret } = config.realtime
  const hub = app.realtime.hub

  // Here only: keep the raw JSON, which body_md5 is computed over.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    request.rawBody = body as string
    try {
      done(null, body === '' ? {} : JSON.parse(body as string))
    } catch {
      done(new HttpError(400, 'The request body is not valid JSON.'), undefined)
    }
  })

  app.addHook('preValidation', async (request: FastifyRequest) => {
    const params = request.params as { appId?: string }
    if (params.appId !== appId) throw new HttpError(404, `Unknown app ${params.appId ?? ''}`.trim())
    const query = request.query as Record<string, string>
    const age = Math.abs(app.clock.nowMs() / 1000 - Number(query.auth_timestamp))
    const path = request.url.split('?')[0] ?? ''
    const bodyMatches = request.method === 'GET' || query.body_md5 === md5(request.rawBody ?? '')
    if (query.auth_key !== key || !(age <= MAX_SIGNATURE_AGE_SECONDS) || !bodyMatches)
      throw invalidSignature()
    if (!validRequestSignature(secret, request.method, path, query)) throw invalidSignature()
  })

  const checkData = (data: string) => {
    if (Buffer.byteLength(data) > MAX_DATA_BYTES) throw tooLarge('The event data is larger than 10 KB.')
  }
  // A server's request, signed: no session and no CSRF token.
  const config_ = { csrf: false as const }
  const tags = ['real-time']

  app.post(
    '/apps/:appId/events',
    {
      config: config_,
      schema: {
        tags,
        summary: 'Publish an event to channels (Pusher HTTP API, signed)',
        params: AppParams,
        querystring: SignedQuery,
        body: TriggerBody,
        response: { 200: EmptyResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      const { name, data, channels, channel, socket_id: except } = request.body
      const targets = channels ?? (channel ? [channel] : [])
      if (targets.length === 0) {
        throw ValidationError.withMessages({
          channels: ['The channels field is required when channel is not present.'],
        })
      }
      if (targets.length > MAX_CHANNELS) throw tooLarge(`An event goes to at most ${MAX_CHANNELS} channels.`)
      checkData(data)
      await hub.publish(targets, name, data, except)
      return {}
    },
  )

  app.post(
    '/apps/:appId/batch_events',
    {
      config: config_,
      schema: {
        tags,
        summary: 'Publish up to 10 events at once (Pusher HTTP API, signed)',
        params: AppParams,
        querystring: SignedQuery,
        body: BatchBody,
        response: { 200: EmptyResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      const { batch } = request.body
      if (batch.length > MAX_BATCH) throw tooLarge(`A batch holds at most ${MAX_BATCH} events.`)
      for (const event of batch) checkData(event.data)
      for (const event of batch) await hub.publish([event.channel], event.name, event.data, event.socket_id)
      return {}
    },
  )

  app.get(
    '/apps/:appId/channels',
    {
      schema: {
        tags,
        summary: 'Occupied channels (this instance’s sockets), optionally by prefix',
        params: AppParams,
        querystring: SignedQuery,
        response: { 200: ChannelsResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      const prefix = request.query.filter_by_prefix ?? ''
      const withUsers =
        request.query.info?.split(',').includes('user_count') && prefix.startsWith('presence-')
      const channels: Record<string, { user_count?: number }> = {}
      for (const name of hub.channels().keys()) {
        if (!name.startsWith(prefix)) continue
        channels[name] = withUsers ? { user_count: (await hub.members(name)).size } : {}
      }
      return { channels }
    },
  )

  app.get(
    '/apps/:appId/channels/:channel',
    {
      schema: {
        tags,
        summary: 'One channel: occupied, subscription and user counts',
        params: ChannelParams,
        querystring: SignedQuery,
        response: { 200: ChannelResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      const { channel } = request.params
      const info = request.query.info?.split(',') ?? []
      const subscriptions = hub.channels().get(channel) ?? 0
      const users = channel.startsWith('presence-') ? (await hub.members(channel)).size : undefined
      return {
        occupied: subscriptions > 0 || (users ?? 0) > 0,
        ...(info.includes('subscription_count') ? { subscription_count: subscriptions } : {}),
        ...(info.includes('user_count') && users !== undefined ? { user_count: users } : {}),
      }
    },
  )

  app.get(
    '/apps/:appId/channels/:channel/users',
    {
      schema: {
        tags,
        summary: 'The users on a presence channel',
        params: ChannelParams,
        querystring: SignedQuery,
        response: { 200: UsersResponse, ...commonErrorResponses },
      },
    },
    async (request) => {
      const { channel } = request.params
      if (!channel.startsWith('presence-')) throw new HttpError(400, 'Only presence channels have users.')
      return { users: [...(await hub.members(channel)).keys()].map((id) => ({ id })) }
    },
  )
}
