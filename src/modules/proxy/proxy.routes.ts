import type { FastifyInstance } from 'fastify'
import accountsRoutes from './accounts/accounts.routes.ts'
import conditionsRoutes from './conditions/conditions.routes.ts'
import marketDataRoutes from './market-data/market-data.routes.ts'
import strategiesRoutes from './strategies/strategies.routes.ts'

/** The upstream's domains the app reads and writes through this service: one route table each. */
export default async function proxyRoutes(app: FastifyInstance) {
  await app.register(marketDataRoutes)
  await app.register(strategiesRoutes)
  await app.register(conditionsRoutes)
  await app.register(accountsRoutes)
}
