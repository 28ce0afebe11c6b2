import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  createUnconfiguredUpstreamClient,
  createUpstreamClient,
  type UpstreamClient,
  UpstreamError,
  upstreamPath,
} from './client.ts'

const TOKEN = 'upstream-secret-token-4711'
const URL_PASSWORD = 'url-password-0815'

interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

// A real HTTP server on loopback; each test sets how it answers and reads what it received.
let server: Server
let port: number
let seen: Seen[] = []
let connections = 0
let handler: (req: IncomingMessage, res: ServerResponse) => void = ok({ data: 'ok' })
const clients: UpstreamClient[] = []

function ok(body: unknown, status = 200) {
  return (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
  }
}

function client(
  options: { timeoutMs?: number; baseUrl?: string; connections?: number } = {},
): UpstreamClient {
  const created = createUpstreamClient({
    baseUrl: options.baseUrl ?? `http://127.0.0.1:${port}`,
    token: TOKEN,
    timeoutMs: options.timeoutMs ?? 5000,
    connections: options.connections,
  })
  clients.push(created)
  return created
}

async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to fail')
    },
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(UpstreamError)
  const upstreamError = error as UpstreamError
  // Whatever the failure, nothing a reader of the message, stack or JSON sees holds a secret.
  const everything = `${upstreamError.message} ${upstreamError.stack} ${JSON.stringify(upstreamError)}`
  expect(everything).not.toContain(TOKEN)
  expect(everything).not.toContain(URL_PASSWORD)
  return upstreamError
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => {
      body += chunk
    })
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
      handler(req, res)
    })
  })
  server.on('connection', () => {
    connections++
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
})

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()))
  // Drop whatever a hanging test left open, so the next test counts its own connections.
  server.closeAllConnections()
  seen = []
  connections = 0
  handler = ok({ data: 'ok' })
})

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

describe('upstream client: what it sends', () => {
  it('sends the bearer token, Accept, X-Request-Id and X-User-Id, and no Content-Type without a body', async () => {
    handler = ok({ data: [{ id: 1 }], meta: { total: 1 } })
    const res = await client().request({ method: 'GET', path: '/strategies', userId: 42, requestId: 'req-1' })
    expect(res).toEqual({ status: 200, body: { data: [{ id: 1 }], meta: { total: 1 } } })
    expect(seen).toHaveLength(1)
    const [call] = seen
    expect(call?.method).toBe('GET')
    expect(call?.url).toBe('/strategies')
    expect(call?.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(call?.headers.accept).toBe('application/json')
    expect(call?.headers['x-request-id']).toBe('req-1')
    expect(call?.headers['x-user-id']).toBe('42')
    expect(call?.headers['content-type']).toBeUndefined()
  })

  it('sends no X-User-Id for a call made for no user', async () => {
    await client().request({ method: 'GET', path: '/markets', requestId: 'req-2' })
    expect(seen[0]?.headers['x-user-id']).toBeUndefined()
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`)
  })

  it('forwards a write body as JSON, unchanged, with Content-Type', async () => {
    handler = ok({ data: { id: 7, name: 'Breakout' } }, 201)
    const body = { name: 'Breakout', nested: { list: [1, 'two', null], unicode: 'Zürich ✓' } }
    const res = await client().request({
      method: 'POST',
      path: '/strategies',
      body,
      userId: 3,
      requestId: 'r',
    })
    expect(res).toEqual({ status: 201, body: { data: { id: 7, name: 'Breakout' } } })
    expect(seen[0]?.method).toBe('POST')
    expect(seen[0]?.headers['content-type']).toBe('application/json')
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual(body)
  })

  it('passes the query string through unchanged', async () => {
    const query = 'market_id=US&q=a%20b&list[]=1&list[]=2&empty='
    await client().request({ method: 'GET', path: '/tickers', query, requestId: 'r' })
    expect(seen[0]?.url).toBe(`/tickers?${query}`)
    await client().request({ method: 'GET', path: '/tickers', query: '', requestId: 'r' })
    expect(seen[1]?.url).toBe('/tickers')
  })

  it('keeps a path prefix of the base URL and never sends URL credentials', async () => {
    const base = `http://user:${URL_PASSWORD}@127.0.0.1:${port}/v2/`
    await client({ baseUrl: base }).request({
      method: 'PUT',
      path: '/conditions/5',
      body: {},
      requestId: 'r',
    })
    expect(seen[0]?.url).toBe('/v2/conditions/5')
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`)
  })

  it.each([
    ['../x', '..%2Fx'],
    ['a/b', 'a%2Fb'],
    ['%2e%2e', '%252e%252e'],
    ['..', '%2E%2E'],
    ['.', '%2E'],
    ['a b?c#d', 'a%20b%3Fc%23d'],
  ])('sends the segment %j as ONE encoded segment (%s)', async (symbol, encoded) => {
    const path = upstreamPath`/strategies/search/${symbol}`
    await client().request({ method: 'GET', path, requestId: 'r' })
    const url = seen[0]?.url ?? ''
    expect(url).toBe(`/strategies/search/${encoded}`)
    const segments = url.split('/')
    expect(segments).toHaveLength(4)
    expect(decodeURIComponent(segments[3] ?? '')).toBe(symbol)
  })

  it('encodes every interpolated value of upstreamPath, numbers included', () => {
    expect(upstreamPath`/strategy/${42}/settings/${'update/name'}`).toBe(
      '/strategy/42/settings/update%2Fname',
    )
    expect(upstreamPath`/markets`).toBe('/markets')
    // An empty value would name another path ('/strategies/' is the list): a 404, never that path.
    expect(() => upstreamPath`/strategies/${''}`).toThrow(expect.objectContaining({ status: 404 }))
  })
})

describe('upstream client: keep-alive', () => {
  // undici frees a socket a microtask after the answer is read, so a call made straight after may
  // open a second one: sequential calls settle on two sockets, not one per call.
  it('reuses its connections for sequential calls', async () => {
    const upstream = client()
    for (let i = 0; i < 50; i++)
      await upstream.request({ method: 'GET', path: '/markets', requestId: `r${i}` })
    expect(seen).toHaveLength(50)
    expect(connections).toBeLessThanOrEqual(2)
  })

  it('never opens more sockets than its bound: extra concurrent calls wait for a free one', async () => {
    const upstream = client({ connections: 3 })
    for (let burst = 0; burst < 4; burst++) {
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          upstream.request({ method: 'GET', path: '/markets', requestId: `${i}` }),
        ),
      )
    }
    expect(seen).toHaveLength(40)
    expect(connections).toBe(3)
  })

  it('keeps the connection after a failed status, and recovers after a time-out', async () => {
    const upstream = client({ timeoutMs: 200, connections: 1 })
    handler = ok({ message: 'nope' }, 503)
    await failure(upstream.request({ method: 'GET', path: '/a', requestId: 'r' }))
    handler = ok({ data: 1 })
    await upstream.request({ method: 'GET', path: '/b', requestId: 'r' })
    expect(connections).toBe(1)
    handler = () => {} // never answers
    await failure(upstream.request({ method: 'GET', path: '/c', requestId: 'r' }))
    handler = ok({ data: 2 })
    expect((await upstream.request({ method: 'GET', path: '/d', requestId: 'r' })).body).toEqual({ data: 2 })
    expect(connections).toBe(2) // the cut call's socket is gone; a fresh one serves the next call
  })
})

describe('upstream client: every failure is an UpstreamError with a readable, secret-free message', () => {
  it.each([500, 503, 404, 422])('status %i', async (status) => {
    handler = ok({ message: `boom with ${TOKEN}` }, status)
    const error = await failure(client().request({ method: 'GET', path: '/markets', requestId: 'r' }))
    expect(error.kind).toBe('status')
    expect(error.upstreamStatus).toBe(status)
    expect(error.message).toBe(`Upstream request failed with status ${status}`)
  })

  it('a redirect is a failure too (not 2xx)', async () => {
    handler = (_req, res) => res.writeHead(302, { location: '/elsewhere' }).end()
    const error = await failure(client().request({ method: 'GET', path: '/markets', requestId: 'r' }))
    expect(error.message).toBe('Upstream request failed with status 302')
  })

  it('a server that never answers is cut at the time-out', async () => {
    handler = () => {}
    const started = performance.now()
    const error = await failure(
      client({ timeoutMs: 150 }).request({ method: 'GET', path: '/x', requestId: 'r' }),
    )
    const elapsed = performance.now() - started
    expect(error.kind).toBe('timeout')
    expect(error.message).toBe('Upstream request timed out after 150 ms')
    expect(elapsed).toBeGreaterThanOrEqual(140)
    expect(elapsed).toBeLessThan(1000)
  })

  it('a server that sends headers and part of the body, then hangs, is cut at the time-out too', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' })
      res.write('{"data": [1, 2,')
    }
    const started = performance.now()
    const error = await failure(
      client({ timeoutMs: 200 }).request({ method: 'GET', path: '/x', requestId: 'r' }),
    )
    expect(error.kind).toBe('timeout')
    expect(error.message).toBe('Upstream request timed out after 200 ms')
    expect(performance.now() - started).toBeLessThan(1000)
  })

  it('a refused connection says the upstream is unreachable', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const freePort = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const upstream = client({ baseUrl: `http://user:${URL_PASSWORD}@127.0.0.1:${freePort}` })
    const error = await failure(upstream.request({ method: 'GET', path: '/markets', requestId: 'r' }))
    expect(error.kind).toBe('network')
    expect(error.message).toBe('Upstream service is unreachable')
    expect(error.message).not.toContain(String(freePort))
  })

  it('a socket destroyed mid-body is a network failure', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' })
      res.write('{"data": [1, 2, 3,', () => req.socket.destroy())
    }
    const error = await failure(client().request({ method: 'GET', path: '/x', requestId: 'r' }))
    expect(error.kind).toBe('network')
    expect(error.message).toBe('Upstream connection failed before the answer was complete')
  })

  it('a socket destroyed before any answer is a network failure', async () => {
    handler = (req) => req.socket.destroy()
    const error = await failure(client().request({ method: 'GET', path: '/x', requestId: 'r' }))
    expect(error.kind).toBe('network')
  })

  it('a body that is not JSON', async () => {
    handler = (_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Bad Gateway</html>')
    const error = await failure(client().request({ method: 'GET', path: '/x', requestId: 'r' }))
    expect(error.kind).toBe('invalid-body')
    expect(error.message).toBe('Upstream answered with invalid JSON')
  })

  it('an empty 200 body is not JSON either', async () => {
    handler = (_req, res) => res.writeHead(200).end()
    const error = await failure(client().request({ method: 'GET', path: '/x', requestId: 'r' }))
    expect(error.message).toBe('Upstream answered with invalid JSON')
  })

  it.each([['{"items": []}'], ['[{"data": 1}]'], ['null'], ['"data"'], ['42']])(
    'JSON without data: %s',
    async (text) => {
      handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(text)
      const error = await failure(client().request({ method: 'GET', path: '/x', requestId: 'r' }))
      expect(error.kind).toBe('invalid-body')
      expect(error.message).toBe('Upstream answer has no data')
    },
  )

  it('data may be null or falsy: it is present', async () => {
    handler = ok({ data: null })
    expect((await client().request({ method: 'GET', path: '/x', requestId: 'r' })).body).toEqual({
      data: null,
    })
  })

  it('a 204 without a body reads as data null', async () => {
    handler = (_req, res) => res.writeHead(204).end()
    const res = await client().request({ method: 'DELETE', path: '/strategies/1', requestId: 'r' })
    expect(res).toEqual({ status: 204, body: { data: null } })
  })

  it('an answer past the size bound fails instead of filling memory', async () => {
    const upstream = createUpstreamClient({
      baseUrl: `http://127.0.0.1:${port}`,
      token: TOKEN,
      timeoutMs: 5000,
      maxResponseBytes: 1024,
    })
    clients.push(upstream)
    handler = ok({ data: 'x'.repeat(4096) })
    const error = await failure(upstream.request({ method: 'GET', path: '/x', requestId: 'r' }))
    expect(error.kind).toBe('invalid-body')
    expect(error.message).toBe('Upstream answer is too large')
  })

  it('without a configured upstream every call fails clearly', async () => {
    const error = await failure(
      createUnconfiguredUpstreamClient().request({ method: 'GET', path: '/x', requestId: 'r' }),
    )
    expect(error.message).toBe('Upstream service is not configured')
  })
})
