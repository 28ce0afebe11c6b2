import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { commonErrorResponses } from '../../../lib/http-schemas.ts'
import { auditActorOf } from '../audit/admin-audit.actor.ts'
import { AdjustBody, AdminBillingParams, AdminBillingResponse, PackageBody } from './admin-billing.schemas.ts'

/** `/api/admin/users/{user}/billing`: an admin reads and changes one user's credits and package. */
export default async function adminBillingRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const billing = app.services.adminBilling
  const tags = ['admin billing']
  const guard = { auth: 'admin' } as const
  const response = { 200: AdminBillingResponse, ...commonErrorResponses }
  // Changes to money need the password confirmed recently on this session, as the profile's
  // sensitive actions do: 423 without it, after the admin guard and before the body is judged.
  const confirmed = { preValidation: app.passwordConfirmation.require }

  app.get(
    '/api/admin/users/:user/billing',
    { config: guard, schema: { tags, summary: "A user's billing", params: AdminBillingParams, response } },
    async (request) => billing.overview(request.params.user),
  )

  app.post(
    '/api/admin/users/:user/billing/adjust',
    {
      config: guard,
      ...confirmed,
      schema: {
        tags,
        summary:
          "Add or take credits (the admin's id and the reason go on the ledger row and an audit record; 423 without a recent password confirmation)",
        params: AdminBillingParams,
        body: AdjustBody,
        response,
      },
    },
    async (request) => billing.adjust(auditActorOf(request), request.params.user, request.body),
  )

  app.post(
    '/api/admin/users/:user/billing/package',
    {
      config: guard,
      ...confirmed,
      schema: {
        tags,
        summary:
          "Grant a package's credits and make it the user's current package (audited with the reason; 423 without a recent password confirmation)",
        params: AdminBillingParams,
        body: PackageBody,
        response,
      },
    },
    async (request) => billing.grantPackage(auditActorOf(request), request.params.user, request.body),
  )
}
