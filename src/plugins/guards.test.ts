import { describe, expect, it } from 'vitest'
import { TEST_APP_KEY } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { sessionCsrfToken } from '../../test/helpers/csrf.ts'
import { signedInClient } from '../../test/helpers/factories.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'
import { encryptSecret } from '../lib/encryption.ts'
import { sealXsrfToken } from '../lib/xsrf.ts'

const t = appUnderTest({
  // Routes that exist only here, to exercise each guard the real routes will declare.
  extend: (app) => {
    app.get('/test/verified', { config: { auth: 'verified' } }, async () => ({ ok: true }))
    app.get('/test/admin', { config: { auth: 'admin' } }, async () => ({ ok: true }))
    app.post('/test/exempt', { config: { csrf: false } }, async () => ({ ok: true }))
    app.post('/test/echo', async (request) => ({ body: request.body }))
    app.route({
      method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      url: '/test/any',
      handler: async () => ({}),
    })
  },
})

const mismatch = { message: 'CSRF token mismatch.' }

const rawCsrfToken = (client: TestClient) => sessionCsrfToken(t, client)

describe('CSRF', () => {
  it('answers 419 to a mutation without a session', async () => {
    const res = await new TestClient(t.baseUrl).post('/test/echo', { a: 1 }, { withoutCsrf: true })
    expect(res.status).toBe(419)
    expect(res.data).toEqual(mismatch)
  })

  it('answers 419 to a mutation with a session but no token, or a wrong one', async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    expect((await client.post('/test/echo', {}, { withoutCsrf: true })).status).toBe(419)
    const wrong = await client.post(
      '/test/echo',
      {},
      { withoutCsrf: true, headers: { 'x-xsrf-token': 'nope' } },
    )
    expect(wrong.status).toBe(419)
    expect(wrong.data).toEqual(mismatch)
  })

  it("refuses another session's token", async () => {
    const mine = new TestClient(t.baseUrl)
    const theirs = new TestClient(t.baseUrl)
    await mine.csrf()
    await theirs.csrf()
    const res = await mine.post(
      '/test/echo',
      {},
      {
        withoutCsrf: true,
        headers: { 'x-xsrf-token': theirs.cookies.get('XSRF-TOKEN') ?? '' },
      },
    )
    expect(res.status).toBe(419)
  })

  it("accepts the XSRF-TOKEN cookie's value as X-XSRF-TOKEN (URL-encoded or not)", async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const cookie = client.cookies.get('XSRF-TOKEN') ?? ''
    for (const header of [cookie, decodeURIComponent(cookie)]) {
      const res = await client.post(
        '/test/echo',
        { a: 1 },
        { withoutCsrf: true, headers: { 'x-xsrf-token': header } },
      )
      expect(res.status).toBe(200)
    }
  })

  it("refuses the cookie's value as a _token field or X-CSRF-TOKEN: a page that reads the cookie cannot post a form with it", async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const cookie = decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? '')
    const asHeader = await client.post(
      '/test/echo',
      {},
      { withoutCsrf: true, headers: { 'x-csrf-token': cookie } },
    )
    expect(asHeader.status).toBe(419)
    expect(asHeader.data).toEqual(mismatch)
    expect((await client.post('/test/echo', { _token: cookie }, { withoutCsrf: true })).status).toBe(419)
    const asForm = await client.post('/test/echo', undefined, {
      withoutCsrf: true,
      raw: `_token=${encodeURIComponent(cookie)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(asForm.status).toBe(419)
    // A _token field is read first, as Laravel does: a wrong one is not rescued by the header.
    const both = await client.post(
      '/test/echo',
      { _token: cookie },
      { withoutCsrf: true, headers: { 'x-xsrf-token': cookie } },
    )
    expect(both.status).toBe(419)
  })

  it('accepts the raw session token, which no cookie carries, as a _token field or X-CSRF-TOKEN', async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const raw = await rawCsrfToken(client)
    expect(decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? '')).not.toContain(raw)
    const viaHeader = await client.post(
      '/test/echo',
      { a: 2 },
      { withoutCsrf: true, headers: { 'x-csrf-token': raw } },
    )
    expect(viaHeader.status).toBe(200)
    expect((await client.post('/test/echo', { _token: raw }, { withoutCsrf: true })).status).toBe(200)
    const viaForm = await client.post('/test/echo', undefined, {
      withoutCsrf: true,
      raw: `_token=${encodeURIComponent(raw)}&a=3`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(viaForm.status).toBe(200)
    expect(viaForm.data.body.a).toBe('3')
    // The raw token is no X-XSRF-TOKEN: that header takes only a value sealed with APP_KEY.
    const rawAsXsrf = await client.post(
      '/test/echo',
      {},
      { withoutCsrf: true, headers: { 'x-xsrf-token': raw } },
    )
    expect(rawAsXsrf.status).toBe(419)
  })

  it('refuses an X-XSRF-TOKEN altered, sealed under another APP_KEY, or sealed for another purpose', async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    const raw = await rawCsrfToken(client)
    const cookie = decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? '')
    const flipped = `${cookie.slice(0, -2)}${cookie.at(-2) === 'A' ? 'B' : 'A'}${cookie.slice(-1)}`
    const otherKey = `base64:${Buffer.alloc(32, 7).toString('base64')}`
    // The right seal with its authentication tag cut to 12 of its 16 bytes (GCM verifies a short tag
    // unless its length is pinned).
    const [version, iv, tag, body] = cookie.split('.') as [string, string, string, string]
    const shortTag = Buffer.from(tag, 'base64url').subarray(0, 12).toString('base64url')
    for (const forged of [
      [version, iv, shortTag, body].join('.'),
      flipped,
      sealXsrfToken(raw, otherKey),
      encryptSecret(raw, TEST_APP_KEY),
      'x'.repeat(10_000),
      '%E0%A4%A',
    ]) {
      const res = await client.post(
        '/test/echo',
        {},
        { withoutCsrf: true, headers: { 'x-xsrf-token': forged } },
      )
      expect(res.status).toBe(419)
    }
    // The same token sealed again under the right key passes: the seal, not the bytes, is checked.
    const resealed = await client.post(
      '/test/echo',
      {},
      { withoutCsrf: true, headers: { 'x-xsrf-token': sealXsrfToken(raw, TEST_APP_KEY) } },
    )
    expect(resealed.status).toBe(200)
  })

  it('checks every mutating method but not reads', async () => {
    const client = new TestClient(t.baseUrl)
    await client.csrf()
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect((await client.request(method, '/test/any', undefined, { withoutCsrf: true })).status).toBe(419)
      expect((await client.request(method, '/test/any')).status).toBe(200)
    }
    expect((await client.get('/test/any', { withoutCsrf: true })).status).toBe(200)
  })

  it('lets a route opt out with csrf: false', async () => {
    const res = await new TestClient(t.baseUrl).post('/test/exempt', {}, { withoutCsrf: true })
    expect(res.status).toBe(200)
  })

  it('checks CSRF before the session guard, as Laravel does', async () => {
    const res = await new TestClient(t.baseUrl).post('/api/logout', undefined, { withoutCsrf: true })
    expect(res.status).toBe(419)
  })
})

describe('auth guards', () => {
  it('verified: 401 for a guest, 403 for an unverified user, 200 once verified', async () => {
    expect((await new TestClient(t.baseUrl).get('/test/verified')).status).toBe(401)
    const unverified = await signedInClient(t)
    const res = await unverified.client.get('/test/verified')
    expect(res.status).toBe(403)
    expect(res.data).toEqual({ message: 'Your email address is not verified.' })
    const verified = await signedInClient(t, { verified: true })
    expect((await verified.client.get('/test/verified')).status).toBe(200)
  })

  it('admin: 401 for a guest, 403 for a user, 200 for an admin', async () => {
    expect((await new TestClient(t.baseUrl).get('/test/admin')).status).toBe(401)
    const user = await signedInClient(t)
    const res = await user.client.get('/test/admin')
    expect(res.status).toBe(403)
    expect(res.data).toEqual({ message: 'This action is unauthorized.' })
    const admin = await signedInClient(t, { isAdmin: true })
    expect((await admin.client.get('/test/admin')).status).toBe(200)
  })
})
