import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { originMismatch } from '../lib/errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `true` takes unsafe requests from pages of any origin (the contact form a marketing site hosts). */
    anyOrigin?: true
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/**
 * Refuses, before any other work (session, body, CSRF), an unsafe request that a browser sent from a
 * page of a foreign origin: its `Origin` is neither APP_URL's nor one of FRONTEND_URL's, or it has no
 * Origin yet `Sec-Fetch-Site: cross-site`. Browsers send Origin on every cross-origin POST, PUT, PATCH
 * and DELETE, plain HTML forms included, so this stops a sibling host that can read the XSRF cookie
 * (SESSION_DOMAIN) even before the token check. Clients that are not browsers (the Stripe webhook,
 * the trigger API, the CLI, curl) send no Origin and pass to their own checks.
 */
async function originCheckPlugin(app: FastifyInstance, { origins }: { origins: readonly string[] }) {
  const allowed = new Set(origins)
  app.addHook('onRequest', (request, _reply, done) => {
    if (SAFE_METHODS.has(request.method)) return done()
    const { origin } = request.headers
    const fromAllowedPage =
      origin === undefined ? request.headers['sec-fetch-site'] !== 'cross-site' : allowed.has(origin)
    if (fromAllowedPage || request.routeOptions.config.anyOrigin) return done()
    done(originMismatch())
  })
}

export default fp(originCheckPlugin, { name: 'origin-check' })
