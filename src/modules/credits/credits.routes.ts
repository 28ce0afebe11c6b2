import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import { commonErrorResponses, Paginated } from '../../lib/http-schemas.ts'
import { signedInUser } from '../../plugins/guards.ts'
import { CreditsResponse, DEFAULT_PER_PAGE, PageQuery } from './credits.schemas.ts'
import holdsRoutes from './holds/holds.routes.ts'
import { TransactionResponse } from './ledger.schemas.ts'
import purchasesRoutes from './purchases/purchases.routes.ts'

/**
 * Credits: `GET /api/credits` and `GET /api/transaction-history` (the user's balance, packages and
 * ledger), then the holds and purchases under it.
 */
export default async function creditsRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { ledger, catalog } = app.services
  const tags = ['billing']

  app.get(
    '/api/credits',
    {
      config: { auth: 'session' },
      schema: {
        tags,
        summary: "The user's credits and the packages on sale",
        response: { 200: CreditsResponse, ...commonErrorResponses },
      },
    },
    async (request) => ({
      ...(await ledger.summary(signedInUser(request).id)),
      packages: [...catalog.packages],
    }),
  )

  app.get(
    '/api/transaction-history',
    {
      config: { auth: 'session' },
      schema: {
        tags,
        summary: "The user's credit ledger, newest first",
        querystring: PageQuery,
        response: { 200: Paginated(TransactionResponse), ...commonErrorResponses },
      },
    },
    async (request) => {
      const { page = 1, per_page: perPage } = request.query
      const path = `${config.appUrl}/api/transaction-history`
      return ledger.history(signedInUser(request).id, page, perPage ?? DEFAULT_PER_PAGE, path, {
        requestedPerPage: perPage,
      })
    },
  )

  await app.register(holdsRoutes, { config })
  await app.register(purchasesRoutes)
}
