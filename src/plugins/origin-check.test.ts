import { describe, expect, it } from 'vitest'
import { SPA_ORIGIN } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { signedInClient, uniqueEmail } from '../../test/helpers/factories.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

const APP_URL = 'http://api.trading.test'
const FOREIGN = 'http://evil.trading.test'
const refused = { message: 'Origin mismatch.' }

const t = appUnderTest(() => ({ env: { APP_URL } }))

/** A signed-in client whose next requests claim to come from `origin` (or none), its cookies and XSRF echo intact. */
async function victim() {
  const signedIn = await signedInClient(t)
  await signedIn.client.post('/api/user/settings', { theme: 'dark' })
  return signedIn
}

/** POST /api/user/settings with the client's cookies and no Origin or Referer, as a server would send it. */
const withoutOrigin = (client: TestClient, body: unknown, headers: Record<string, string>) =>
  fetch(`${t.baseUrl}/api/user/settings`, {
    method: 'POST',
    headers: {
      cookie: client.cookieHeader,
      'content-type': 'application/json',
      accept: 'application/json',
      ...headers,
    },
    body: JSON.stringify(body),
  })

const settingsOf = async (client: TestClient) => (await client.get('/api/user/settings')).data

describe('unsafe requests from a page of a foreign origin', () => {
  it('are refused with 403 before anything is done, though the cookies and the XSRF header are right', async () => {
    const { client } = await victim()
    for (const [method, path, body] of [
      ['POST', '/api/user/settings', { theme: 'light' }],
      ['POST', '/api/logout', undefined],
      ['PUT', '/api/user-profile/profile-information', { name: 'Mallory', email: uniqueEmail() }],
      ['DELETE', '/api/user-profile', { password: 'correct horse battery' }],
    ] as const) {
      const res = await client.request(method, path, body, { headers: { origin: FOREIGN } })
      expect(res.status, `${method} ${path}`).toBe(403)
      expect(res.data).toEqual(refused)
    }
    // Nothing changed: still signed in, settings as they were.
    expect((await client.get('/api/user')).status).toBe(200)
    expect(await settingsOf(client)).toEqual({ theme: 'dark' })
  })

  it('are refused from an opaque origin (sandboxed frame, data: URL) and, without Origin, when Sec-Fetch-Site says cross-site', async () => {
    const { client } = await victim()
    const opaque = await client.post('/api/user/settings', { theme: 'x' }, { headers: { origin: 'null' } })
    expect(opaque.status).toBe(403)
    const crossSite = await withoutOrigin(client, { theme: 'y' }, { 'sec-fetch-site': 'cross-site' })
    expect(crossSite.status).toBe(403)
    expect(await crossSite.json()).toEqual(refused)
    expect(await settingsOf(client)).toEqual({ theme: 'dark' })
  })

  it('are refused before the body is read or a session is opened', async () => {
    const guest = new TestClient(t.baseUrl, FOREIGN)
    const res = await guest.post('/api/login', undefined, {
      withoutCsrf: true,
      raw: '{"email": not json',
      headers: { 'content-type': 'application/json' },
    })
    expect(res.status).toBe(403)
    expect(res.headers.getSetCookie()).toEqual([])
  })

  it('leave reads alone: a GET from anywhere is answered (CORS decides what the page may read)', async () => {
    const res = await new TestClient(t.baseUrl, FOREIGN).get('/up')
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('unsafe requests the service takes', () => {
  it('from the SPA (FRONTEND_URL) and from APP_URL itself, same-site or cross-site', async () => {
    const { client } = await victim()
    for (const origin of [SPA_ORIGIN, APP_URL]) {
      for (const site of ['same-site', 'cross-site', 'same-origin']) {
        const res = await client.post(
          '/api/user/settings',
          { theme: `${origin}|${site}` },
          { headers: { origin, 'sec-fetch-site': site } },
        )
        expect(res.status, `${origin} ${site}`).toBe(200)
      }
    }
  })

  it('with no Origin at all (servers, the CLI, curl): on to the CSRF check, which decides', async () => {
    const { client } = await victim()
    const xsrf = decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? '')
    expect((await withoutOrigin(client, { theme: 'none' }, { 'x-xsrf-token': xsrf })).status).toBe(200)
    const sites: Record<string, string>[] = [{}, { 'sec-fetch-site': 'none' }]
    for (const site of sites) {
      expect((await withoutOrigin(client, { theme: 'no' }, site)).status).toBe(419)
    }
    expect(await settingsOf(client)).toEqual({ theme: 'none' })
  })

  it('the contact form from any origin, as a plain HTML form a marketing site hosts', async () => {
    t.clock.advance(61_000) // its own throttle window
    const email = uniqueEmail('marketing')
    const form = new URLSearchParams({
      name: 'Ada',
      email,
      subject: 'Hello',
      message: 'From the landing page',
    })
    const res = await new TestClient(t.baseUrl, 'https://www.example.org').post(
      '/api/contact-form',
      undefined,
      {
        withoutCsrf: true,
        raw: form.toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
      },
    )
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'Thank you for your message. We will get back to you soon.' })
  })
})

describe('outside production with FRONTEND_URL unset', () => {
  const dev = appUnderTest(() => ({
    env: { NODE_ENV: 'development', LOG_LEVEL: 'silent', FRONTEND_URL: '' },
  }))

  it("takes the app's dev server (Vite's http://localhost:5173) as the SPA: CORS and writes", async () => {
    const vite = new TestClient(dev.baseUrl, 'http://localhost:5173')
    await vite.csrf()
    const res = await vite.post('/api/register', {
      name: 'Dev Server',
      email: uniqueEmail(),
      password: 'correct horse battery staple',
      password_confirmation: 'correct horse battery staple',
    })
    expect(res.status).toBe(201)
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    expect(res.headers.get('access-control-allow-credentials')).toBe('true')
    // Only the usual dev-server origins, not any page.
    const other = new TestClient(dev.baseUrl, FOREIGN)
    await other.csrf()
    expect(await other.post('/api/user/settings', { theme: 'dark' })).toMatchObject({
      status: 403,
      data: refused,
    })
  })
})
