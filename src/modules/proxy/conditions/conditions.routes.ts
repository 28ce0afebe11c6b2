import type { FastifyInstance } from 'fastify'
import { upstreamPath } from '../../../lib/upstream/client.ts'
import { FreeBody } from '../proxy.schemas.ts'
import { type ProxyRoute, registerProxyRoutes } from '../proxy-route.ts'
import { ConditionParams } from './conditions.schemas.ts'

const tags = ['conditions and signals']

// Conditions and signals belong to strategies: their reads and writes share the `strategies` group.
const read = { method: 'GET', cache: 'user', group: 'strategies', answer: 'data', tags } as const
const write = { cache: 'none', invalidates: ['strategies'], tags } as const
const condition = ({ id = '' }: Record<string, string>) => upstreamPath`/conditions/${id}`

/** The spec's "Conditions and signals" section. */
export const conditionRoutes: readonly ProxyRoute[] = [
  { ...read, url: '/api/conditions', upstream: () => '/conditions', summary: "The user's conditions" },
  {
    ...write,
    method: 'POST',
    url: '/api/conditions',
    upstream: () => '/conditions',
    answer: 'envelope',
    status: 201,
    summary: 'Create a condition',
    body: FreeBody,
  },
  {
    ...read,
    url: '/api/conditions/:id',
    upstream: condition,
    summary: 'One condition',
    params: ConditionParams,
  },
  {
    ...write,
    method: 'PUT',
    url: '/api/conditions/:id',
    upstream: condition,
    answer: 'envelope',
    summary: 'Update a condition',
    params: ConditionParams,
    body: FreeBody,
  },
  {
    ...write,
    method: 'DELETE',
    url: '/api/conditions/:id',
    upstream: condition,
    answer: 'none',
    status: 204,
    summary: 'Delete a condition',
    params: ConditionParams,
  },
  { ...read, url: '/api/signals', upstream: () => '/signals', summary: "The user's signals" },
]

/** Conditions and signals through the caching proxy. */
export default async function conditionsPlugin(app: FastifyInstance) {
  registerProxyRoutes(app, app.services.proxy, conditionRoutes)
}
