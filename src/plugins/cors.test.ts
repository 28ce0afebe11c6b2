import { describe, expect, it } from 'vitest'
import { SPA_ORIGIN } from '../../test/helpers/build-test-app.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

const t = appUnderTest(() => ({ env: { FRONTEND_URL: `${SPA_ORIGIN}, https://app.example.com/` } }))

const preflight = (origin: string) =>
  fetch(`${t.baseUrl}/api/login`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type,x-xsrf-token,x-requested-with',
    },
  })

describe('CORS', () => {
  it('answers a preflight from an app origin with a credentialed grant', async () => {
    for (const origin of [SPA_ORIGIN, 'https://app.example.com']) {
      const res = await preflight(origin)
      expect(res.status).toBe(204)
      expect(res.headers.get('access-control-allow-origin')).toBe(origin)
      expect(res.headers.get('access-control-allow-credentials')).toBe('true')
      expect(res.headers.get('access-control-allow-methods')).toContain('POST')
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-xsrf-token')
      expect(res.headers.get('vary')?.toLowerCase()).toContain('origin')
    }
  })

  it('grants nothing to any other origin', async () => {
    const res = await preflight('https://evil.example')
    // Not a preflight it answers: as any method a route lacks, 405.
    expect(res.status).toBe(405)
    expect(res.headers.get('access-control-allow-origin')).toBeNull()
    expect(res.headers.get('access-control-allow-credentials')).toBeNull()
    const read = await fetch(`${t.baseUrl}/up`, { headers: { origin: 'https://evil.example' } })
    expect(read.headers.get('access-control-allow-origin')).toBeNull()
    expect(read.headers.get('access-control-allow-credentials')).toBeNull()
    expect(read.headers.get('access-control-expose-headers')).toBeNull()
    // Whoever asks, the answer depends on the Origin: a shared cache must not reuse it for another.
    expect(read.headers.get('vary')).toBe('Origin')
  })

  it('grants actual requests from an app origin and exposes the request id', async () => {
    const res = await fetch(`${t.baseUrl}/up`, { headers: { origin: SPA_ORIGIN } })
    expect(res.headers.get('access-control-allow-origin')).toBe(SPA_ORIGIN)
    expect(res.headers.get('access-control-allow-credentials')).toBe('true')
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/,\s*/)
    expect(exposed).toEqual(
      expect.arrayContaining([
        'x-request-id',
        'x-cache',
        'retry-after',
        'x-ratelimit-limit',
        'x-ratelimit-remaining',
        'x-ratelimit-reset',
      ]),
    )
  })
})
