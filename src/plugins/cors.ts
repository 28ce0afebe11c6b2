import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** Credentialed CORS for the app's own origins (FRONTEND_URL); any other origin gets no grant at all. */
async function corsPlugin(app: FastifyInstance, { origins }: { origins: readonly string[] }) {
  const allowed = new Set(origins)
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin)),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    // Unset, the plugin echoes Access-Control-Request-Headers, as Laravel's `allowed_headers => ['*']`.
    exposedHeaders: ['X-Request-Id', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining'],
    maxAge: 7200,
    strictPreflight: false,
  })
}

export default fp(corsPlugin, { name: 'cors' })
