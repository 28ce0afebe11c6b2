import type { FastifyInstance } from 'fastify'
import { upstreamPath } from '../../../lib/upstream/client.ts'
import { FreeBody } from '../proxy.schemas.ts'
import { type ProxyRoute, registerProxyRoutes } from '../proxy-route.ts'
import {
  STRATEGY_ACTIONS,
  StrategyActionParams,
  StrategyParams,
  StrategySearchParams,
} from './strategies.schemas.ts'

const tags = ['strategies']

/** Per-user reads in the `strategies` group: any strategy or condition write of the user clears them. */
const read = { method: 'GET', cache: 'user', group: 'strategies', answer: 'data', tags } as const
/** Writes clear the caller's `strategies` group, whether the upstream accepted them or not. */
const write = { cache: 'none', invalidates: ['strategies'], tags } as const

const strategy = ({ strategy = '' }: Record<string, string>) => upstreamPath`/strategy/${strategy}`

/** The spec's "Strategies" section: CRUD, search, conditions, activities and every action. */
export const strategyRoutes: readonly ProxyRoute[] = [
  { ...read, url: '/api/strategies', upstream: () => '/strategies', summary: "The user's strategies" },
  {
    ...write,
    method: 'POST',
    url: '/api/strategies',
    upstream: () => '/strategies',
    answer: 'envelope',
    status: 201,
    summary: 'Create a strategy',
    body: FreeBody,
  },
  {
    ...read,
    url: '/api/strategies/:id',
    upstream: ({ id = '' }) => upstreamPath`/strategies/${id}`,
    summary: 'One strategy',
    params: StrategyParams,
  },
  {
    ...write,
    method: 'PUT',
    url: '/api/strategies/:id',
    upstream: ({ id = '' }) => upstreamPath`/strategies/${id}`,
    answer: 'envelope',
    summary: 'Update a strategy',
    params: StrategyParams,
    body: FreeBody,
  },
  {
    ...write,
    method: 'DELETE',
    url: '/api/strategies/:id',
    upstream: ({ id = '' }) => upstreamPath`/strategies/${id}`,
    answer: 'none',
    status: 204,
    summary: 'Delete a strategy',
    params: StrategyParams,
  },
  {
    ...read,
    url: '/api/strategies/search/:symbol',
    upstream: ({ symbol = '' }) => upstreamPath`/strategies/search/${symbol}`,
    summary: "The user's strategies on a symbol",
    params: StrategySearchParams,
  },
  {
    ...read,
    url: '/api/strategy/:strategy/conditions',
    upstream: (params) => `${strategy(params)}/conditions`,
    summary: "A strategy's conditions",
    params: StrategyActionParams,
  },
  {
    ...read,
    url: '/api/strategy/:strategy/activities',
    upstream: (params) => `${strategy(params)}/activities`,
    summary: "A strategy's activities",
    params: StrategyActionParams,
  },
  {
    ...write,
    method: 'POST',
    url: '/api/strategy/:strategy/clear-conditions-readings',
    upstream: (params) => `${strategy(params)}/clear-conditions-readings`,
    answer: 'data',
    summary: "Clear a strategy's condition readings",
    params: StrategyActionParams,
  },
  // The 35 actions, one row each from one list: the suffix names both paths.
  ...STRATEGY_ACTIONS.map(
    (suffix): ProxyRoute => ({
      ...write,
      method: 'POST',
      url: `/api/strategy/:strategy/${suffix}`,
      upstream: (params) => `${strategy(params)}/${suffix}`,
      answer: 'data',
      summary: `Strategy action: ${suffix}`,
      params: StrategyActionParams,
      body: FreeBody,
    }),
  ),
]

/** Strategies through the caching proxy. */
export default async function strategiesPlugin(app: FastifyInstance) {
  registerProxyRoutes(app, app.services.proxy, strategyRoutes)
}
