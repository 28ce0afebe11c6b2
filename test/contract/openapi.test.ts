import { compileErrors, validate } from '@readme/openapi-parser'
import { beforeAll, describe, expect, it } from 'vitest'
import { openApiPath } from '../helpers/routes.ts'
import { appUnderTest } from '../helpers/under-test.ts'

interface OpenApiDocument {
  openapi: string
  info: { title: string; version: string }
  paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>
}

const DOCUMENT = '/api/openapi.json'

const t = appUnderTest()
let doc: OpenApiDocument
beforeAll(async () => {
  const res = await fetch(`${t.baseUrl}${DOCUMENT}`, { headers: { accept: 'application/json' } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('application/json')
  doc = (await res.json()) as OpenApiDocument
})

/** The app's own `/api/...` routes, as the document should list them. */
const apiRoutes = () =>
  t.app.routeTable.filter(
    (route) => route.url.startsWith('/api/') && route.url !== DOCUMENT && route.method !== 'HEAD',
  )

describe(`GET ${DOCUMENT}`, () => {
  it('is a valid OpenAPI 3.1 document, version 1.0.0', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./)
    expect(doc.info.version).toBe('1.0.0')
    // The validator dereferences in place, so it gets a copy.
    const result = await validate(structuredClone(doc))
    expect(result.valid ? 'valid' : compileErrors(result)).toBe('valid')
  })

  it('describes every /api route the app registers, with its method', () => {
    const routes = apiRoutes()
    expect(routes.map((route) => `${route.method} ${route.url}`)).toEqual(
      expect.arrayContaining(['POST /api/register', 'POST /api/login', 'POST /api/logout', 'GET /api/user']),
    )
    const missing = routes
      .filter((route) => !doc.paths[openApiPath(route.url)]?.[route.method.toLowerCase()])
      .map((route) => `${route.method} ${openApiPath(route.url)}`)
    expect(missing).toEqual([])
  })

  it('marks the routes that need a session with the session cookie', () => {
    const unmarked = apiRoutes()
      .filter((route) => route.auth !== null)
      .filter((route) => {
        const operation = doc.paths[openApiPath(route.url)]?.[route.method.toLowerCase()]
        return !operation?.security?.some((requirement) => 'sessionCookie' in requirement)
      })
      .map((route) => `${route.method} ${route.url}`)
    expect(unmarked).toEqual([])
    expect(doc.paths['/api/register']?.post?.security).toBeUndefined()
  })

  it('leaves itself out', () => {
    expect(doc.paths[DOCUMENT]).toBeUndefined()
  })
})

describe('GET /docs', () => {
  it('serves the HTML reference page', async () => {
    const res = await fetch(`${t.baseUrl}/docs`, { redirect: 'follow' })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/html/)
    const html = await res.text()
    expect(html).toMatch(/<html/i)
    expect(html).toContain('swagger-ui')
  })
})
