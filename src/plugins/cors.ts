import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { HeaderPairs } from '../lib/answer-headers.ts'

const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'
// What the app may read of an answer across origins: the request id, the proxy's cache state (and
// whether an answer is stale), the
// throttles' headers, Fortify's password-confirmation age, and a download's file name.
const EXPOSED =
  'X-Request-Id, X-Cache, Cache-Status, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Retry-After, Content-Disposition'
const MAX_AGE = '7200'

declare module 'fastify' {
  interface FastifyInstance {
    /** The CORS headers of an answer to a request from this origin (the warm-read lane sets them too). */
    corsAnswerHeaders(origin: string | undefined): HeaderPairs
  }
}

/**
 * The CORS headers of an answer (not a preflight's) to a request from `origin`: every answer varies
 * on Origin; an app origin also gets the grant. One frozen list per origin, made once.
 */
export function corsAnswerHeaders(origins: readonly string[]): (origin: string | undefined) => HeaderPairs {
  const none: HeaderPairs = Object.freeze([['vary', 'Origin'] as const])
  const granted = new Map<string, HeaderPairs>(
    origins.map((origin) => [
      origin,
      Object.freeze([
        ...none,
        ['access-control-allow-origin', origin] as const,
        ['access-control-allow-credentials', 'true'] as const,
        ['access-control-expose-headers', EXPOSED] as const,
      ]),
    ]),
  )
  return (origin) => (origin === undefined ? none : (granted.get(origin) ?? none))
}

/**
 * Credentialed CORS for the app's own origins (FRONTEND_URL); any other origin gets no grant at all.
 * As @fastify/cors did with an origin check, in one synchronous hook: every answer varies on
 * Origin; an app origin gets the grant (credentials, exposed headers) and its preflight is answered
 * at once, 204, echoing the requested headers (Laravel's `allowed_headers => ['*']`). A preflight
 * from anywhere else reaches the OPTIONS route, which answers it as any method a route lacks (405).
 */
async function corsPlugin(app: FastifyInstance, { origins }: { origins: readonly string[] }) {
  const allowed = new Set(origins)
  const answerHeaders = corsAnswerHeaders(origins)
  app.decorate('corsAnswerHeaders', answerHeaders)
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin
    for (const [name, value] of answerHeaders(origin)) reply.header(name, value)
    if (request.method !== 'OPTIONS' || origin === undefined || !allowed.has(origin)) return done()
    reply.header('access-control-allow-methods', METHODS)
    reply.header('vary', 'Origin, Access-Control-Request-Headers')
    const requested = request.headers['access-control-request-headers']
    if (requested !== undefined) reply.header('access-control-allow-headers', requested)
    reply.header('access-control-max-age', MAX_AGE)
    reply.code(204).header('content-length', '0').send()
  })
  app.options('*', { schema: { hide: true } }, (_request, reply) => reply.callNotFound())
}

export default fp(corsPlugin, { name: 'cors' })
