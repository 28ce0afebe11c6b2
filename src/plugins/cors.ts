import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'
const EXPOSED = 'X-Request-Id, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining'
const MAX_AGE = '7200'

/**
 * Credentialed CORS for the app's own origins (FRONTEND_URL); any other origin gets no grant at all.
 * As @fastify/cors did with an origin check, in one synchronous hook: every answer varies on
 * Origin; an app origin gets the grant (credentials, exposed headers) and its preflight is answered
 * at once, 204, echoing the requested headers (Laravel's `allowed_headers => ['*']`). A preflight
 * from anywhere else reaches the OPTIONS route, which answers it as any method a route lacks (405).
 */
async function corsPlugin(app: FastifyInstance, { origins }: { origins: readonly string[] }) {
  const allowed = new Set(origins)
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('vary', 'Origin')
    const origin = request.headers.origin
    if (origin === undefined || !allowed.has(origin)) return done()
    reply.header('access-control-allow-origin', origin)
    reply.header('access-control-allow-credentials', 'true')
    reply.header('access-control-expose-headers', EXPOSED)
    if (request.method !== 'OPTIONS') return done()
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
