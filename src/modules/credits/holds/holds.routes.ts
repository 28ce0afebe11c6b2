import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../../config.ts'
import { commonErrorResponses, MessageResponse, Paginated } from '../../../lib/http-schemas.ts'
import { createPeriodicTask } from '../../../lib/periodic.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { PageQuery } from '../credits.schemas.ts'
import {
  CapturedResponse,
  CreateHoldBody,
  HoldOrderBody,
  HoldResponse,
  ReleasedResponse,
  TransferHoldBody,
  TransferredResponse,
} from './holds.schemas.ts'

/**
 * How often each instance tries the expiry sweep (and once at start). Holds live for days
 * (HOLD_TTL_HOURS), so a minute late is nothing to the user; a sweep that finds nothing is one indexed
 * query, and an instance that finds another sweeping gives up at once, so every minute costs little.
 */
export const HOLD_EXPIRY_SWEEP_EVERY_MS = 60_000

/** `/api/credit-holds`: reserve credits for automated parent orders, then capture or release them. */
export default async function creditHoldsRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { holds } = app.services
  const tags = ['credit holds']
  const guard = { auth: 'session' as const }

  if (config.credits.holdTtlHours > 0) {
    const sweeper = createPeriodicTask(
      async () => {
        const released = await holds.expireHeld()
        if (released > 0) app.log.info({ released }, 'credit holds: expired holds released')
      },
      {
        everyMs: HOLD_EXPIRY_SWEEP_EVERY_MS,
        onError: (err) => app.log.warn({ err }, 'credit holds: the expiry sweep failed'),
      },
    )
    app.addHook('onReady', async () => sweeper.start())
    app.addHook('preClose', async () => sweeper.stop())
  }

  app.get(
    '/api/credit-holds',
    {
      config: guard,
      schema: {
        tags,
        summary: "The user's holds, newest first",
        querystring: PageQuery,
        response: { 200: Paginated(HoldResponse), ...commonErrorResponses },
      },
    },
    async (request) =>
      holds.list(signedInUser(request).id, request.query, `${config.appUrl}/api/credit-holds`),
  )

  app.post(
    '/api/credit-holds',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Reserve credits for a parent order (idempotent per order)',
        body: CreateHoldBody,
        response: { 200: HoldResponse, 201: HoldResponse, ...commonErrorResponses },
      },
    },
    async (request, reply) => {
      const { hold, created } = await holds.create(signedInUser(request).id, request.body)
      return reply.code(created ? 201 : 200).send(hold)
    },
  )

  app.post(
    '/api/credit-holds/capture',
    {
      config: guard,
      schema: {
        tags,
        summary: "Consume a held hold's credits (order filled)",
        body: HoldOrderBody,
        response: { 200: CapturedResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({
      captured: await holds.capture(signedInUser(request).id, request.body.broker_parent_order_id),
    }),
  )

  app.post(
    '/api/credit-holds/release',
    {
      config: guard,
      schema: {
        tags,
        summary: "Free a held hold's credits (order cancelled or expired)",
        body: HoldOrderBody,
        response: { 200: ReleasedResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({
      released: await holds.release(signedInUser(request).id, request.body.broker_parent_order_id),
    }),
  )

  app.post(
    '/api/credit-holds/transfer',
    {
      config: guard,
      schema: {
        tags,
        summary: 'Move a held hold to another parent order',
        body: TransferHoldBody,
        response: { 200: TransferredResponse, 409: MessageResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({ transferred: await holds.transfer(signedInUser(request).id, request.body) }),
  )
}
