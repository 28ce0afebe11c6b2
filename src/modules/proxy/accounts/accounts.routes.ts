import type { FastifyInstance } from 'fastify'
import { upstreamPath } from '../../../lib/upstream/client.ts'
import { type ProxyRoute, registerProxyRoutes } from '../proxy-route.ts'
import { AccountParams } from './accounts.schemas.ts'

const tags = ['broker accounts']

// Broker-account summaries are the user's own; nothing here writes, so no group clears them (TTL only).
const read = { method: 'GET', cache: 'user', answer: 'data', tags } as const
const account = (suffix: string) => ({
  ...read,
  url: `/api/accounts/:accountId/${suffix}`,
  upstream: ({ accountId = '' }: Record<string, string>) =>
    `${upstreamPath`/accounts/${accountId}`}/${suffix}`,
  params: AccountParams,
})

/** The spec's "Broker accounts" section. */
export const accountRoutes: readonly ProxyRoute[] = [
  { ...read, url: '/api/accounts', upstream: () => '/accounts', summary: "The user's broker accounts" },
  {
    ...read,
    url: '/api/accounts/balances',
    upstream: () => '/accounts/balances',
    summary: "Balances of the user's broker accounts",
  },
  { ...account('balance'), summary: "One account's balance" },
  { ...account('growth'), summary: "One account's growth" },
  { ...account('pnl'), summary: "One account's PnL" },
]

/** Broker-account summaries through the caching proxy. */
export default async function accountsPlugin(app: FastifyInstance) {
  registerProxyRoutes(app, app.services.proxy, accountRoutes)
}
