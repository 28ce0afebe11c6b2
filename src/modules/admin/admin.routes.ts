import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import adminBillingRoutes from './billing/admin-billing.routes.ts'
import adminUsersRoutes from './users/admin-users.routes.ts'

/** The admin screens: users, and each user's billing. */
export default async function adminRoutes(app: FastifyInstance, { config }: { config: Config }) {
  await app.register(adminUsersRoutes, { config })
  await app.register(adminBillingRoutes)
}
