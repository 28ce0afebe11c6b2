import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { UserRow } from '../db/schema/index.ts'
import { csrfMismatch, emailNotVerified, forbidden, type HttpError, unauthenticated } from '../lib/errors.ts'
import { unsealXsrfToken } from '../lib/xsrf.ts'

export type AuthGuard = 'session' | 'verified' | 'admin'

/** What a throttle's key may be made from. */
export type ThrottleSubject = Pick<FastifyRequest, 'user' | 'session' | 'ip' | 'body'>

/** Laravel's `throttle:` middleware: `max` attempts per `decaySeconds`, counted per `key(request)`. */
export interface ThrottleRule {
  name: string
  max: number
  decaySeconds: number
  key(request: ThrottleSubject): string
  /**
   * A per-address rule's wider count: the key naming the client's IPv6 /48 (`throttleNetwork`)
   * where `key` names its /64, allowed NETWORK_LIMIT_MULTIPLE times `max`; undefined where the
   * request has none (IPv4, or a key that is not the address, such as a signed-in user's).
   */
  networkKey?(request: ThrottleSubject): string | undefined
}

/** One method of one registered route, with the guard options it declared. */
export interface RouteTableEntry {
  readonly method: string
  /** The full path as registered, parameters as `:name` (e.g. `/api/trades/:id`). */
  readonly url: string
  readonly auth: AuthGuard | null
  /** `false` only where the route opted out of the CSRF check; reads are never checked anyway. */
  readonly csrf: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Every route registered after the guards plugin (all of the app's), one entry per method,
     * including the HEAD twin Fastify adds to each GET. Contract tests walk it.
     */
    readonly routeTable: readonly RouteTableEntry[]
  }
  interface FastifyContextConfig {
    /** Who may call the route: a signed-in user, one with a verified email, or an admin. */
    auth?: AuthGuard
    /** `false` exempts a mutation from the CSRF check (contact form, payment webhook). */
    csrf?: false
    throttle?: ThrottleRule
    /** `true` answers `Cache-Control: no-store`: secrets (2FA setup, recovery codes) and the user. */
    noStore?: true
  }
}

/** The refusal of a caller a route's `auth` guard does not let in, or undefined when it does. */
export function authRefusal(auth: AuthGuard, user: UserRow | null): HttpError | undefined {
  if (!user) return unauthenticated()
  if (auth === 'verified' && !user.emailVerifiedAt) return emailNotVerified()
  if (auth === 'admin' && !user.isAdmin) return forbidden()
  return undefined
}

/** The user of a route guarded by `auth`; the guard has already answered 401 for anyone else. */
export function signedInUser(request: FastifyRequest): UserRow {
  if (!request.user) throw unauthenticated()
  return request.user
}

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** Opens an X-XSRF-TOKEN value this service did not seal (the replaced system's, during its cutover). */
type ForeignCsrfToken = (header: string) => string | undefined

/**
 * The CSRF token a mutation presents, as Laravel's VerifyCsrfToken reads it: a `_token` field or
 * X-CSRF-TOKEN carry the raw session token (which this API never puts in a cookie); only when
 * neither is sent, X-XSRF-TOKEN carries the XSRF-TOKEN cookie's sealed value (URL-decoded), opened
 * with APP_KEY, else by `foreign`. So the cookie's value posted as a form field is no token at all.
 */
function presentedCsrfToken(
  request: FastifyRequest,
  appKey: string,
  foreign: ForeignCsrfToken | undefined,
): string | undefined {
  const body = request.body as { _token?: unknown } | undefined
  if (body && typeof body === 'object' && typeof body._token === 'string') return body._token
  const header = request.headers['x-csrf-token']
  if (typeof header === 'string') return header
  const xsrf = request.headers['x-xsrf-token']
  if (typeof xsrf !== 'string') return undefined
  let sealed: string
  try {
    sealed = decodeURIComponent(xsrf)
  } catch {
    return undefined
  }
  return unsealXsrfToken(sealed, appKey) ?? foreign?.(sealed)
}

// Hashing first gives equal lengths, so the comparison takes the same time whatever was sent.
const digest = (value: string) => createHash('sha256').update(value).digest()
/** Whether a presented secret equals the expected one, compared in constant time. */
export const sameToken = (a: string, b: string) => timingSafeEqual(digest(a), digest(b))

/**
 * Route options become checks, in Laravel's middleware order: CSRF, then who the caller is, then the
 * throttle. They run before schema validation, so a guest sending garbage gets 419/401, not 422.
 */
async function guardsPlugin(
  app: FastifyInstance,
  { appKey, foreignCsrfToken }: { appKey: string; foreignCsrfToken?: ForeignCsrfToken | undefined },
) {
  const routeTable: RouteTableEntry[] = []
  app.decorate('routeTable', routeTable as readonly RouteTableEntry[])

  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) {
      routeTable.push(
        Object.freeze({
          method: method.toUpperCase(),
          url: route.url,
          auth: route.config?.auth ?? null,
          csrf: route.config?.csrf !== false,
        }),
      )
    }
    // The OpenAPI document says which routes need the session cookie.
    if (route.config?.auth && route.schema && !route.schema.security) {
      route.schema.security = [{ sessionCookie: [] }]
    }
  })

  /** The checks that need no I/O; a refusal is thrown. */
  const check = (request: FastifyRequest, reply: FastifyReply, config: FastifyContextConfig) => {
    const { auth, csrf, noStore } = config
    if (noStore) reply.header('cache-control', 'no-store')
    if (MUTATIONS.has(request.method) && csrf !== false) {
      const expected = request.session?.row.payload.csrfToken
      const presented = presentedCsrfToken(request, appKey, foreignCsrfToken)
      if (!expected || !presented || !sameToken(expected, presented)) throw csrfMismatch()
    }
    const refusal = auth && authRefusal(auth, request.user)
    if (refusal) throw refusal
  }

  // A callback hook: a route without a throttle passes without a promise.
  app.addHook('preValidation', (request: FastifyRequest, reply: FastifyReply, done) => {
    if (request.is404) return done()
    // Read once: each read of request.routeOptions builds a new object.
    const { config } = request.routeOptions
    try {
      check(request, reply, config)
    } catch (error) {
      return done(error as Error)
    }
    const { throttle } = config
    if (!throttle) return done()
    let counting: Promise<void> | undefined
    try {
      counting = app.rateLimiter.enforce(throttle, request, reply)
    } catch (error) {
      return done(error as Error)
    }
    if (counting) counting.then(() => done(), done)
    else done()
  })
}

export default fp(guardsPlugin, { name: 'guards', dependencies: ['session', 'rate-limit'] })
