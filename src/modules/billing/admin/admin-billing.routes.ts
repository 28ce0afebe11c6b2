import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../../config.ts'
import { commonErrorResponses } from '../../../lib/http-schemas.ts'
import { signedInUser } from '../../../plugins/guards.ts'
import { createHoldsService } from '../../credits/holds/holds.service.ts'
import { createLedgerService } from '../../credits/ledger.service.ts'
import { createUsersService } from '../../users/users.service.ts'
import type { BillingCatalog } from '../billing.catalog.ts'
import { AdjustBody, AdminBillingParams, AdminBillingResponse, PackageBody } from './admin-billing.schemas.ts'
import { createAdminBillingService } from './admin-billing.service.ts'

/** `/api/admin/users/{user}/billing`: an admin reads and changes one user's credits and package. */
export default async function adminBillingRoutes(
  fastify: FastifyInstance,
  { config, catalog }: { config: Config; catalog: BillingCatalog },
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { db, clock } = app
  const ledger = createLedgerService({ db, clock })
  const holds = createHoldsService({ db, clock, ledger, holdDefault: config.credits.holdDefault })
  const users = createUsersService({ db, clock })
  const billing = createAdminBillingService({
    db,
    clock,
    catalog,
    ledger,
    holds,
    users,
    appUrl: config.appUrl,
  })
  const tags = ['admin billing']
  const guard = { auth: 'admin' } as const
  const response = { 200: AdminBillingResponse, ...commonErrorResponses }

  app.get(
    '/api/admin/users/:user/billing',
    { config: guard, schema: { tags, summary: "A user's billing", params: AdminBillingParams, response } },
    async (request) => billing.overview(request.params.user),
  )

  app.post(
    '/api/admin/users/:user/billing/adjust',
    {
      config: guard,
      schema: {
        tags,
        summary: "Add or take credits (the admin's id and the reason go on the ledger row)",
        params: AdminBillingParams,
        body: AdjustBody,
        response,
      },
    },
    async (request) => billing.adjust(signedInUser(request).id, request.params.user, request.body),
  )

  app.post(
    '/api/admin/users/:user/billing/package',
    {
      config: guard,
      schema: {
        tags,
        summary: "Grant a package's credits and make it the user's current package",
        params: AdminBillingParams,
        body: PackageBody,
        response,
      },
    },
    async (request) =>
      billing.grantPackage(signedInUser(request).id, request.params.user, request.body.package_id),
  )
}
