/**
 * The SPA's sign-in as a real browser does it, across origins: a page on one port of 127.0.0.1 uses
 * axios (withCredentials + withXSRFToken, as Sanctum's docs set it up) against the API on another
 * port. Cookies are per host, not per port, so the page can read the API's XSRF-TOKEN cookie, just as
 * an SPA on localhost:3000 talking to localhost:8000. Chromium enforces CORS for real here, so the
 * test also proves that an origin outside FRONTEND_URL gets nothing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../helpers/build-test-app.ts'
import { CHROMIUM, CHROMIUM_ARGS, requireChromium } from '../helpers/chromium.ts'
import { createUser } from '../helpers/factories.ts'

const axiosSource = readFileSync(new URL('../../node_modules/axios/dist/axios.min.js', import.meta.url))

/** The SPA: reads the API origin and the credentials from its query string, reports every step. */
const PAGE = `<!doctype html>
<html>
<head><meta charset="utf-8"><title>SPA</title><script src="/axios.min.js"></script></head>
<body>
<pre id="result">pending</pre>
<script>
(async () => {
  const params = new URLSearchParams(location.search)
  // Laravel's resources/js/bootstrap.js sets X-Requested-With, Sanctum's docs the two flags.
  const http = axios.create({
    baseURL: params.get('api'),
    withCredentials: true,
    withXSRFToken: true,
    headers: { 'X-Requested-With': 'XMLHttpRequest' },
  })
  const step = async (request) => {
    try {
      const res = await request()
      return { status: res.status, data: res.data }
    } catch (error) {
      return {
        status: error.response ? error.response.status : null,
        code: error.code || null,
        message: String(error.message || error),
      }
    }
  }
  const result = {}
  result.csrf = await step(() => http.get('/guard/csrf-cookie'))
  result.xsrfCookieReadable = document.cookie.split('; ').some((c) => c.startsWith('XSRF-TOKEN='))
  result.login = await step(() =>
    http.post('/api/login', { email: params.get('email'), password: params.get('password') }),
  )
  result.user = await step(() => http.get('/api/user'))
  window.__result = result
  document.getElementById('result').textContent = JSON.stringify(result)
})()
</script>
</body>
</html>`

interface Step {
  status: number | null
  data?: unknown
  code?: string | null
  message?: string
}
interface PageResult {
  csrf: Step
  xsrfCookieReadable: boolean
  login: Step
  user: Step
}

async function startSpaServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://spa.invalid').pathname
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      res.end(PAGE)
    } else if (path === '/axios.min.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' })
      res.end(axiosSource)
    } else {
      res.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return { server, origin: `http://127.0.0.1:${port}` }
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

describe('cross-origin sign-in from a browser (Chromium)', () => {
  let t: TestApp
  let spa: { server: Server; origin: string }
  let foreign: { server: Server; origin: string }
  let context: BrowserContext
  let profileDir: string

  beforeAll(async () => {
    requireChromium()
    spa = await startSpaServer()
    foreign = await startSpaServer()
    t = await buildTestApp({ env: { FRONTEND_URL: `http://spa.test:5173,${spa.origin}` } })
    profileDir = mkdtempSync(join(tmpdir(), 'chromium-profile-'))
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [...CHROMIUM_ARGS],
    })
  })

  afterAll(async () => {
    await context?.close()
    if (profileDir) rmSync(profileDir, { recursive: true, force: true })
    await Promise.all([spa && closeServer(spa.server), foreign && closeServer(foreign.server)])
    await t?.close() // closes (and on PostgreSQL drops) the test database too
  })

  /** Loads the SPA from `origin`, pointed at the API, and returns what its script reported. */
  async function runPage(origin: string, email: string, password: string): Promise<PageResult> {
    await context.clearCookies()
    const page = await context.newPage()
    const logs: string[] = []
    page.on('console', (message) => logs.push(`${message.type()}: ${message.text()}`))
    page.on('pageerror', (error) => logs.push(`pageerror: ${error.message}`))
    try {
      const query = new URLSearchParams({ api: t.baseUrl, email, password })
      await page.goto(`${origin}/?${query}`)
      await page
        .waitForFunction('window.__result !== undefined', undefined, { timeout: 15_000 })
        .catch(() => {
          throw new Error(`the page never reported a result; console:\n${logs.join('\n')}`)
        })
      const fromDom = JSON.parse((await page.textContent('#result')) ?? 'null') as PageResult
      expect(fromDom).toEqual(await page.evaluate('window.__result'))
      return fromDom
    } finally {
      await page.close()
    }
  }

  it('signs in from an allowed origin and reads the user with the session cookie', async () => {
    const { user, password } = await createUser(t.database.db)
    const result = await runPage(spa.origin, user.email, password)

    expect(result.csrf.status).toBe(204)
    expect(result.xsrfCookieReadable).toBe(true)
    expect(result.login).toMatchObject({ status: 200, data: { two_factor: false } })
    expect(result.user.status).toBe(200)
    expect((result.user.data as { email?: string }).email).toBe(user.email)
  })

  it('gives an origin outside FRONTEND_URL nothing: every request fails in the browser', async () => {
    const { user, password } = await createUser(t.database.db)
    const result = await runPage(foreign.origin, user.email, password)

    // Blocked by CORS: axios sees a network error with no response at all.
    for (const step of [result.csrf, result.login, result.user]) {
      expect(step).toMatchObject({ status: null, code: 'ERR_NETWORK' })
    }
  })
})
