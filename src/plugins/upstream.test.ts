import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { memoryLog } from '../../test/helpers/memory-log.ts'
import { sharedDatabase } from '../../test/helpers/test-database.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

const TOKEN = 'plugin-secret-token-9876'

// The production logger settings, writing to memory, to check what an upstream failure logs.
const log = memoryLog()
const { logger } = log

let upstream: Server
let upstreamUrl: string
let seen: IncomingMessage[] = []
let answer: (res: ServerResponse) => void = () => {}

/** Test-only routes using the decorators as a module would. */
function testRoutes(app: FastifyInstance) {
  app.get('/test/upstream', async (request) => {
    const res = await app.upstream.request({
      method: 'GET',
      path: '/markets',
      requestId: request.id,
      userId: 5,
    })
    return res.body.data
  })
  app.get('/test/cached', async (request, reply) => {
    const { value, hit } = await app.cache.remember(
      'test:markets',
      { ttlSeconds: 60, tags: ['markets'] },
      async () => {
        const res = await app.upstream.request({ method: 'GET', path: '/markets', requestId: request.id })
        return res.body.data
      },
    )
    reply.header('x-cache', hit ? 'HIT' : 'MISS')
    return value
  })
  app.get('/test/invalidate', async () => {
    await app.cache.invalidateTags(['markets'])
    return { ok: true }
  })
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push(req)
    req.resume()
    req.on('end', () => answer(res))
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((resolve) => upstream.close(() => resolve()))
})
const t = appUnderTest(() => ({
  env: { UPSTREAM_BASE_URL: upstreamUrl, UPSTREAM_API_TOKEN: TOKEN },
  loggerInstance: logger,
  extend: testRoutes,
}))

const json =
  (body: unknown, status = 200) =>
  (res: ServerResponse) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))

describe('app.upstream', () => {
  it('calls the configured upstream with the token, the request id and the user id', async () => {
    seen = []
    answer = json({ data: [{ id: 'US' }] })
    const res = await new TestClient(t.baseUrl).get('/test/upstream', {
      headers: { 'x-request-id': 'trace-123' },
    })
    expect(res.status).toBe(200)
    expect(res.data).toEqual([{ id: 'US' }])
    expect(seen).toHaveLength(1)
    expect(seen[0]?.url).toBe('/markets')
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(seen[0]?.headers['x-request-id']).toBe('trace-123')
    expect(seen[0]?.headers['x-user-id']).toBe('5')
  })

  it('an upstream failure is a 500 {"error"} with the readable message, logged at warn without the token', async () => {
    answer = json({ message: `internal ${TOKEN}` }, 503)
    const from = log.text.length
    const res = await new TestClient(t.baseUrl).get('/test/upstream')
    expect(res.status).toBe(500)
    expect(res.data).toEqual({ error: 'Upstream request failed with status 503' })
    expect(res.text).not.toContain(TOKEN)
    const lines = log.text
      .slice(from)
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { level: number; msg: string; upstream?: unknown })
    expect(lines.find((line) => line.msg === 'Upstream request failed with status 503')).toMatchObject({
      level: 40,
      upstream: { kind: 'status', status: 503 },
    })
    expect(log.text).not.toContain(TOKEN)
  })

  it('without UPSTREAM_BASE_URL every call is a 500 {"error"} saying so', async () => {
    const bare = await buildTestApp({ database: sharedDatabase(t.database), extend: testRoutes })
    try {
      const res = await new TestClient(bare.baseUrl).get('/test/upstream')
      expect(res.status).toBe(500)
      expect(res.data).toEqual({ error: 'Upstream service is not configured' })
    } finally {
      await bare.close()
    }
  })
})

describe('app.cache', () => {
  it('is the in-process cache without Redis: a miss, then hits until its tag is invalidated', async () => {
    seen = []
    answer = json({ data: ['m1'] })
    const client = new TestClient(t.baseUrl)
    await client.get('/test/invalidate')
    const first = await client.get('/test/cached')
    const second = await client.get('/test/cached')
    expect([first.headers.get('x-cache'), second.headers.get('x-cache')]).toEqual(['MISS', 'HIT'])
    expect(second.data).toEqual(['m1'])
    expect(seen).toHaveLength(1)
    await client.get('/test/invalidate')
    expect((await client.get('/test/cached')).headers.get('x-cache')).toBe('MISS')
    expect(seen).toHaveLength(2)
  })

  it('a failed upstream answer is not cached', async () => {
    const client = new TestClient(t.baseUrl)
    await client.get('/test/invalidate')
    answer = json({}, 500)
    expect((await client.get('/test/cached')).status).toBe(500)
    answer = json({ data: ['back'] })
    const res = await client.get('/test/cached')
    expect(res.headers.get('x-cache')).toBe('MISS')
    expect(res.data).toEqual(['back'])
  })
})

const redisUrl = process.env.TEST_REDIS_URL
// Only with a Redis to share (CI's PostgreSQL + Redis run); defined, not skipped, when there is one.
if (redisUrl) {
  describe('app.cache with Redis', () => {
    it('two app instances share it: an invalidation through one makes the other miss', async () => {
      const prefix = `test:${randomBytes(6).toString('hex')}:`
      const env = { UPSTREAM_BASE_URL: upstreamUrl, UPSTREAM_API_TOKEN: TOKEN }
      const connect = () => new Redis(redisUrl, { keyPrefix: prefix })
      const database = sharedDatabase(t.database)
      const a = await buildTestApp({ env, database, redis: connect(), extend: testRoutes })
      const b = await buildTestApp({ env, database, redis: connect(), extend: testRoutes })
      try {
        seen = []
        answer = json({ data: ['shared'] })
        const onA = new TestClient(a.baseUrl)
        const onB = new TestClient(b.baseUrl)
        expect((await onA.get('/test/cached')).headers.get('x-cache')).toBe('MISS')
        expect((await onB.get('/test/cached')).headers.get('x-cache')).toBe('HIT')
        await onA.get('/test/invalidate')
        expect((await onB.get('/test/cached')).headers.get('x-cache')).toBe('MISS')
        expect(seen).toHaveLength(2)
      } finally {
        await b.close()
        await a.close()
      }
    })
  })
}
