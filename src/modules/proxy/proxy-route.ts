import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type TObject, type TSchema, Type } from 'typebox'
import type { UserRow } from '../../db/schema/index.ts'
import { type AuthGuard, signedInUser, type ThrottleRule } from '../../plugins/guards.ts'
import { CACHE_STATUS_HIT } from './cache-status.ts'
import {
  MAX_FREE_BODY_BYTES,
  proxyErrorResponses,
  UpstreamEnvelope,
  UpstreamPage,
  UpstreamPayload,
} from './proxy.schemas.ts'
import type { AnswerShape, ProxyAnswer, ProxyRule, ProxyService } from './proxy.service.ts'

/**
 * One row of a proxied route table: the API route, the upstream path it maps to, and the rules
 * (cache scope, what it clears, how the answer is shaped). Every proxied route is such a row.
 */
export interface ProxyRoute extends ProxyRule {
  /** The upstream path, each parameter encoded as one segment (build it with `upstreamPath`). */
  upstream: (params: Record<string, string>) => string
  /** Success status: 200 unless said (201 for creates, 204 for deletes). */
  status?: 200 | 201 | 204
  auth?: Extract<AuthGuard, 'session' | 'verified'>
  /**
   * The caller's upstream allowance the route spends: `reads` (PROXY_READS_PER_MINUTE) for a GET,
   * `writes` (PROXY_WRITES_PER_MINUTE) otherwise, unless said (a read sent as a POST).
   */
  budget?: 'reads' | 'writes'
  summary: string
  tags: string[]
  params?: TObject
  body?: TSchema
}

const successSchema: Record<AnswerShape, TSchema> = {
  data: UpstreamPayload,
  envelope: UpstreamEnvelope,
  paginated: UpstreamPage,
  none: Type.Null({ description: 'No content.' }),
}

/** Registers each row as a route with one generic handler: validated input in, the proxy's answer out. */
export function registerProxyRoutes(
  app: FastifyInstance,
  proxy: ProxyService,
  routes: readonly ProxyRoute[],
) {
  for (const route of routes) {
    // Its page links are APP_URL and this path: a path parameter would have to be filled in first.
    if (route.answer === 'paginated' && route.url.includes(':')) {
      throw new Error(`paginated route ${route.url} cannot take path parameters`)
    }
    const status = route.status ?? 200
    app.route({
      method: route.method,
      url: route.url,
      ...(route.body ? { bodyLimit: MAX_FREE_BODY_BYTES } : {}),
      // Every call counts against the user's share of the upstream quota: reads cached or not.
      config: {
        auth: route.auth ?? 'session',
        throttle: budgetThrottle(app, route),
      },
      schema: {
        tags: route.tags,
        summary: route.summary,
        ...(route.params ? { params: route.params } : {}),
        // No query schema would let any query through unvalidated; an empty one strips it.
        querystring: route.querystring ?? Type.Object({}),
        ...(route.body ? { body: route.body } : {}),
        response: { [status]: successSchema[route.answer], ...proxyErrorResponses },
      },
      handler: (request, reply) => handle(proxy, route, status, request, reply),
    })
    if (takesWarmLane(route)) {
      const inMemory = proxy.inMemoryReader(route, route.upstream({}))
      app.warmReads.add({
        url: route.url,
        auth: route.auth ?? 'session',
        throttle: app.upstreamReadThrottle,
        headers: WARM_HEADERS,
        inMemory: (user) => inMemory(user.id),
      })
    }
  }
}

const budgetOf = (route: ProxyRoute) => route.budget ?? (route.method === 'GET' ? 'reads' : 'writes')

/** The throttle of the caller's upstream allowance a route spends: its reads' or its writes'. */
const budgetThrottle = (app: FastifyInstance, route: ProxyRoute): ThrottleRule =>
  budgetOf(route) === 'reads' ? app.upstreamReadThrottle : app.upstreamWriteThrottle

/**
 * Spends one call of `user`'s upstream allowance on `route` outside the route (the AI tools' calls),
 * in the same window as the route's own throttle counts: past it, the rate limiter's 429.
 */
export type UpstreamBudget = (route: ProxyRoute, user: UserRow) => Promise<void> | undefined

/** The budget on the rate limiter: the routes' own rules, keyed by the user alone (no address or body). */
export function upstreamBudget(app: FastifyInstance): UpstreamBudget {
  return (route, user) =>
    app.rateLimiter.enforce(budgetThrottle(app, route), { user, session: null, ip: '', body: undefined })
}

const WARM_HEADERS = [
  ['x-cache', 'HIT'],
  ['cache-status', CACHE_STATUS_HIT],
  ['content-type', 'application/json; charset=utf-8'],
] as const

/**
 * A cached read of a path without parameters: answered from memory as the route would answer it
 * (plugins/warm-reads.ts). Not where the query schema has defaults: the route's query would then
 * not be empty, nor its cache key the lane's.
 */
function takesWarmLane(route: ProxyRoute) {
  const query = Object.values(route.querystring?.properties ?? {}) as { default?: unknown }[]
  return (
    route.method === 'GET' &&
    route.cache !== 'none' &&
    !route.url.includes(':') &&
    query.every((property) => property.default === undefined)
  )
}

function handle(
  proxy: ProxyService,
  route: ProxyRoute,
  status: number,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const call = {
    path: route.upstream(request.params as Record<string, string>),
    query: request.query as Record<string, unknown>,
    userId: signedInUser(request).id,
    requestId: request.id,
    ...(route.body ? { body: request.body as Record<string, unknown> } : {}),
  }
  const answer = proxy.call(route, call)
  // A warm read is answered in this turn; anything else when its promise settles.
  return answer instanceof Promise
    ? answer.then((settled) => send(reply, settled, status))
    : send(reply, answer, status)
}

function send(reply: FastifyReply, answer: ProxyAnswer, status: number) {
  if (answer.cache) reply.header('x-cache', answer.cache)
  if (answer.cacheStatus) reply.header('cache-status', answer.cacheStatus)
  if (answer.body === undefined) return reply.code(204).send()
  // The JSON text is sent as it is: cached answers are stored serialised, so a hit costs no serialising.
  return reply.code(status).type('application/json; charset=utf-8').send(answer.body)
}
