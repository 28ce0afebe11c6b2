import { beforeAll, describe, expect, it } from 'vitest'
import type { RouteTableEntry } from '../../src/plugins/guards.ts'
import { type ClientResponse, TestClient } from '../helpers/client.ts'
import { signedInClient } from '../helpers/factories.ts'
import { concretePath, MUTATIONS } from '../helpers/routes.ts'
import { appUnderTest } from '../helpers/under-test.ts'

/**
 * Walks every route the app registers, so each route a later issue adds is held to the guard
 * contract the moment it is registered: `auth` routes refuse guests, mutations demand the CSRF token.
 */

// The only writes let through without the token: the spec's public form, Stripe's webhook, Laravel's
// broadcasting auth (CSRF-exempt there too), and the Pusher trigger API (signed requests of a server).
const MAY_SKIP_CSRF = [
  'POST /api/contact-form',
  'POST /payments/buy-credits/webhook',
  'POST /broadcasting/auth',
  'POST /api/broadcasting/auth',
  'POST /apps/:appId/events',
  'POST /apps/:appId/batch_events',
]

const t = appUnderTest()
let routes: readonly RouteTableEntry[]
beforeAll(() => {
  routes = t.app.routeTable
})

const label = (route: RouteTableEntry) => `${route.method} ${route.url}`
const guarded = () => routes.filter((route) => route.auth !== null)
const csrfChecked = () => routes.filter((route) => MUTATIONS.has(route.method) && route.csrf)

/** What was wrong with an answer, or null when it is `status` with exactly `body` (HEAD: no body). */
function mismatch(route: RouteTableEntry, res: ClientResponse, status: number, body: object): string | null {
  const expectedBody = route.method === 'HEAD' ? '' : body
  const actualBody = route.method === 'HEAD' ? res.text : res.data
  if (res.status === status && JSON.stringify(actualBody) === JSON.stringify(expectedBody)) return null
  return `${label(route)} answered ${res.status} ${res.text.slice(0, 200)}`
}

describe('the route table', () => {
  it('lists every registered route, one entry per method, with its guard options', () => {
    expect(routes.length).toBeGreaterThan(0)
    const byLabel = new Map(routes.map((route) => [label(route), route]))
    expect(byLabel.get('GET /up')).toEqual({ method: 'GET', url: '/up', auth: null, csrf: true })
    expect(byLabel.get('GET /guard/csrf-cookie')?.auth).toBeNull()
    expect(byLabel.get('POST /api/register')).toEqual({
      method: 'POST',
      url: '/api/register',
      auth: null,
      csrf: true,
    })
    expect(byLabel.get('POST /api/login')?.auth).toBeNull()
    expect(byLabel.get('POST /api/logout')).toEqual({
      method: 'POST',
      url: '/api/logout',
      auth: 'session',
      csrf: true,
    })
    expect(byLabel.get('GET /api/user')?.auth).toBe('session')
    // Fastify's automatic HEAD twin carries the GET's guard.
    expect(byLabel.get('HEAD /api/user')?.auth).toBe('session')
    expect(byLabel.has('GET /api/openapi.json')).toBe(true)
    expect(guarded().length).toBeGreaterThanOrEqual(2)
    expect(csrfChecked().length).toBeGreaterThanOrEqual(3)
  })

  it('cannot be changed from outside the guards plugin', () => {
    const entry = routes[0] as RouteTableEntry & { auth: unknown }
    expect(() => {
      entry.auth = 'admin'
    }).toThrow(TypeError)
  })

  it(`exempts no mutation from CSRF but ${MAY_SKIP_CSRF.join(' and ')}`, () => {
    const exempt = routes.filter((route) => MUTATIONS.has(route.method) && !route.csrf).map(label)
    expect(exempt.filter((route) => !MAY_SKIP_CSRF.includes(route))).toEqual([])
  })
})

describe('every route with `auth`', () => {
  it('answers 401 {"message":"Unauthenticated."} to a guest (mutations carrying a valid CSRF token)', async () => {
    const failures: string[] = []
    for (const route of guarded()) {
      const guest = new TestClient(t.baseUrl)
      // The client fetches /guard/csrf-cookie before a mutation and echoes the token, so CSRF passes.
      const res = await guest.request(
        route.method,
        concretePath(route.url),
        MUTATIONS.has(route.method) ? {} : undefined,
      )
      if (MUTATIONS.has(route.method) && !guest.cookies.has('XSRF-TOKEN')) {
        failures.push(`${label(route)}: the guest had no CSRF token`)
      }
      const problem = mismatch(route, res, 401, { message: 'Unauthenticated.' })
      if (problem) failures.push(problem)
    }
    expect(failures).toEqual([])
  })
})

describe('every POST/PUT/PATCH/DELETE route not marked csrf: false', () => {
  const expected = { message: 'CSRF token mismatch.' }

  it('answers 419 {"message":"CSRF token mismatch."} to a guest without a session or token', async () => {
    const failures: string[] = []
    for (const route of csrfChecked()) {
      const guest = new TestClient(t.baseUrl)
      const res = await guest.request(route.method, concretePath(route.url), {}, { withoutCsrf: true })
      const problem = mismatch(route, res, 419, expected)
      if (problem) failures.push(problem)
    }
    expect(failures).toEqual([])
  })

  it('answers 419 to a guest with a session that leaves the token out', async () => {
    const guest = new TestClient(t.baseUrl)
    await guest.csrf()
    const failures: string[] = []
    for (const route of csrfChecked()) {
      const res = await guest.request(route.method, concretePath(route.url), {}, { withoutCsrf: true })
      const problem = mismatch(route, res, 419, expected)
      if (problem) failures.push(problem)
    }
    expect(failures).toEqual([])
  })

  it('answers 419 to a signed-in admin who leaves the token out, and nothing happens', async () => {
    const { client, user } = await signedInClient(t, { isAdmin: true, verified: true })
    const failures: string[] = []
    for (const route of csrfChecked()) {
      const res = await client.request(route.method, concretePath(route.url), {}, { withoutCsrf: true })
      const problem = mismatch(route, res, 419, expected)
      if (problem) failures.push(problem)
    }
    expect(failures).toEqual([])
    // POST /api/logout among them did not end the session.
    const me = await client.get('/api/user')
    expect(me.status).toBe(200)
    expect(me.data.id).toBe(user.id)
  })
})
