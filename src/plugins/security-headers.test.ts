import { describe, expect, it } from 'vitest'
import { TestClient } from '../../test/helpers/client.ts'
import { signedInClient } from '../../test/helpers/factories.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)

/** Uploads a profile photo as the app does; answers its path on this service. */
async function uploadPhoto(client: TestClient): Promise<string> {
  const form = new FormData()
  form.append('photo', new Blob([PNG], { type: 'image/png' }), 'me.png')
  const request = new Request('http://multipart.invalid/', { method: 'POST', body: form })
  const res = await client.post('/api/user-profile/profile-photo', undefined, {
    raw: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type') ?? '' },
  })
  expect(res.status).toBe(200)
  return new URL(res.data.profile_photo_url).pathname
}

describe('on an https APP_URL', () => {
  const t = appUnderTest({ env: { APP_URL: 'https://api.trading.test' } })

  it('answers Strict-Transport-Security, errors included', async () => {
    for (const path of ['/api/health', '/api/user', '/no-such-page']) {
      const res = await new TestClient(t.baseUrl).get(path)
      expect(res.headers.get('strict-transport-security'), path).toBe('max-age=31536000')
    }
  })

  it('marks both session cookies Secure without SESSION_SECURE_COOKIE', async () => {
    const res = await fetch(`${t.baseUrl}/guard/csrf-cookie`)
    const cookies = res.headers.getSetCookie()
    expect(cookies.map((line) => line.split('=')[0])).toEqual(['app_session', 'XSRF-TOKEN'])
    for (const line of cookies) expect(line).toMatch(/; Secure(;|$)/)
  })

  it('sets no cookie on a public profile photo, not even to refresh or clear the session', async () => {
    const { client } = await signedInClient(t)
    const path = await uploadPhoto(client)
    const photo = await fetch(`${t.baseUrl}${path}`, {
      headers: { cookie: client.cookieHeader },
    })
    expect(photo.status).toBe(200)
    expect(photo.headers.get('cache-control')).toMatch(/^public/)
    expect(photo.headers.getSetCookie()).toEqual([])
    const stale = await fetch(`${t.baseUrl}${path}`, { headers: { cookie: 'app_session=gone' } })
    expect(stale.status).toBe(200)
    expect(stale.headers.getSetCookie()).toEqual([])
    // The session itself is fine: the next API answer refreshes it as before.
    const me = await client.get('/api/user')
    expect(me.status).toBe(200)
    expect(me.headers.getSetCookie().length).toBe(2)
  })
})

describe('on an http APP_URL', () => {
  const t = appUnderTest({ env: { APP_URL: 'http://localhost:8000' } })

  it('answers no Strict-Transport-Security and sets cookies without Secure', async () => {
    const res = await fetch(`${t.baseUrl}/guard/csrf-cookie`)
    expect(res.headers.get('strict-transport-security')).toBeNull()
    for (const line of res.headers.getSetCookie()) expect(line).not.toMatch(/Secure/)
  })

  it('answers Cache-Control: no-store on the user, the 2FA secret and QR code, and the recovery codes', async () => {
    const { client, password } = await signedInClient(t)
    const me = await client.get('/api/user')
    expect(me.status).toBe(200)
    expect(me.headers.get('cache-control')).toBe('no-store')

    expect((await client.post('/api/user/confirm-password', { password })).status).toBe(201)
    const enabled = await client.post('/api/user/two-factor-authentication', { password })
    expect(enabled.status).toBe(200)
    expect(enabled.data.secret).toBeTruthy()
    expect(enabled.headers.get('cache-control')).toBe('no-store')

    const codes = await client.get('/api/user/two-factor-recovery-codes')
    expect(codes.status).toBe(200)
    expect(codes.headers.get('cache-control')).toBe('no-store')
    const regenerated = await client.post('/api/user/two-factor-recovery-codes')
    expect(regenerated.status).toBe(200)
    expect(regenerated.headers.get('cache-control')).toBe('no-store')
  })
})

describe('on every answer', () => {
  const t = appUnderTest()

  it('answers X-Content-Type-Options: nosniff, errors and preflights included', async () => {
    const { client } = await signedInClient(t)
    const guest = new TestClient(t.baseUrl)
    const answers = await Promise.all([
      client.get('/api/user'),
      guest.get('/api/user'),
      guest.get('/no-such-page'),
      client.post('/api/user/settings', 'not an object'),
      guest.post('/api/user/settings', {}, { withoutCsrf: true }),
      guest.post('/api/user/settings', {}, { headers: { origin: 'https://elsewhere.example' } }),
      guest.request('OPTIONS', '/api/login', undefined, {
        headers: { 'access-control-request-method': 'POST' },
      }),
      guest.get('/up'),
    ])
    expect(answers.map((res) => res.status)).toEqual([200, 401, 404, 422, 419, 403, 204, 200])
    for (const res of answers) expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  })
})
