import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import adminBillingRoutes from './admin/admin-billing.routes.ts'
import { type BillingCatalog, loadBillingCatalog } from './billing.catalog.ts'
import purchasesRoutes from './purchases/purchases.routes.ts'

/** Billing: the admin's billing routes and buying credits, on the catalog of config/billing.json. */
export default async function billingRoutes(
  app: FastifyInstance,
  options: { config: Config; catalog?: BillingCatalog },
) {
  const catalog = options.catalog ?? loadBillingCatalog()
  await app.register(adminBillingRoutes, { config: options.config, catalog })
  await app.register(purchasesRoutes, { config: options.config, catalog })
}
