import http from 'node:http'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { FakeUpstream } from './fake-upstream.ts'

// Each FakeAnswer kind behaves as named, over real HTTP; the proxy's failure tests rely on it.
const fake = new FakeUpstream()
beforeAll(() => fake.start())
afterAll(() => fake.stop())
beforeEach(() => fake.reset())

/** A raw request: the path goes out byte for byte (fetch would normalise `%2e%2e`). */
function rawRequest(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const { hostname, port } = new URL(fake.url)
  return new Promise((resolve, reject) => {
    const req = http.request(
      { hostname, port, path, method, headers: options.headers, agent: false },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
        res.on('error', reject)
        res.on('aborted', () => reject(new Error('aborted mid-body')))
      },
    )
    req.on('error', reject)
    if (options.timeoutMs) req.setTimeout(options.timeoutMs, () => req.destroy(new Error('timed out')))
    req.end(options.body)
  })
}

describe('FakeUpstream', () => {
  it('records every call with its raw url, headers and parsed body, and answers like the simulator by default', async () => {
    const res = await fetch(`${fake.url}/markets?market_id=US`, {
      headers: { authorization: 'Bearer secret-token', 'x-user-id': '42', 'x-request-id': 'req-1' },
    })
    expect(res.status).toBe(200)
    expect(((await res.json()) as any).data).toMatchObject({ id: 'US', name: 'US Equities' })
    const post = await rawRequest('POST', '/strategy/a%2Fb/settings/update-name?x=1', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'New' }),
    })
    // No strategy "a/b" (and no X-User-Id): the simulator's answer, not a crash.
    expect(post.status).toBe(400)

    expect(fake.calls).toHaveLength(2)
    const [get, write] = fake.calls
    expect(get).toMatchObject({
      method: 'GET',
      url: '/markets?market_id=US',
      path: '/markets',
      query: 'market_id=US',
      body: undefined,
    })
    expect(get?.headers).toMatchObject({
      authorization: 'Bearer secret-token',
      'x-user-id': '42',
      'x-request-id': 'req-1',
    })
    expect(write).toMatchObject({
      method: 'POST',
      url: '/strategy/a%2Fb/settings/update-name?x=1',
      path: '/strategy/a%2Fb/settings/update-name',
      body: { name: 'New' },
    })
    expect(fake.callsTo('POST', '/strategy/')).toEqual([write])
    expect(fake.callsTo('*', '/markets')).toEqual([get])
    expect(fake.callsTo('GET', '/strategy/')).toEqual([])
  })

  it('keeps per-user simulated data by X-User-Id, and reset() forgets calls, answers and data', async () => {
    const created = await fetch(`${fake.url}/strategies`, {
      method: 'POST',
      headers: { 'x-user-id': '7', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Kept' }),
    })
    expect(created.status).toBe(201)
    const { data } = (await created.json()) as any
    expect((await fetch(`${fake.url}/strategies/${data.id}`, { headers: { 'x-user-id': '7' } })).status).toBe(
      200,
    )
    expect((await fetch(`${fake.url}/strategies/${data.id}`, { headers: { 'x-user-id': '8' } })).status).toBe(
      404,
    )
    fake.on('GET', '/markets', { body: { data: 'custom' } })
    fake.reset()
    expect(fake.calls).toEqual([])
    expect((await fetch(`${fake.url}/strategies/${data.id}`, { headers: { 'x-user-id': '7' } })).status).toBe(
      404,
    )
    expect(((await (await fetch(`${fake.url}/markets`)).json()) as any).data).toHaveLength(5)
  })

  it('answers {status, body} for a path with :params or a RegExp, the latest matching rule first', async () => {
    fake.on('GET', '/tickers/:symbol', { status: 503, body: { message: 'down' } })
    fake.on('get', /^\/tickers\/BTC/, { body: { data: { symbol: 'special' } } })
    const down = await fetch(`${fake.url}/tickers/AAPL`)
    expect(down.status).toBe(503)
    expect(down.headers.get('content-type')).toBe('application/json')
    expect(await down.json()).toEqual({ message: 'down' })
    expect(await (await fetch(`${fake.url}/tickers/BTC-USD`)).json()).toEqual({ data: { symbol: 'special' } })
    // A rule for another method or a longer path does not apply.
    expect((await fetch(`${fake.url}/tickers/AAPL/x`)).status).toBe(404)
    expect((await fetch(`${fake.url}/tickers/AAPL`, { method: 'POST' })).status).toBe(405)
    fake.on('DELETE', '/strategies/:id', { status: 204, body: undefined })
    const deleted = await fetch(`${fake.url}/strategies/3`, { method: 'DELETE' })
    expect(deleted.status).toBe(204)
    expect(await deleted.text()).toBe('')
  })

  it('waits delayMs before answering', async () => {
    fake.on('GET', '/markets', { body: { data: [] }, delayMs: 300 })
    const started = performance.now()
    const res = await fetch(`${fake.url}/markets`)
    expect(await res.json()).toEqual({ data: [] })
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
  })

  it('hang: never answers (the client times out), and stop() does not wait for it', async () => {
    fake.on('GET', '/markets', { hang: true })
    const error = await fetch(`${fake.url}/markets`, { signal: AbortSignal.timeout(300) }).catch(
      (e: Error) => e,
    )
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).name).toBe('TimeoutError')
    expect(fake.calls).toHaveLength(1)

    const other = await new FakeUpstream().start()
    other.on('GET', '/x', { hang: true })
    const pending = fetch(`${other.url}/x`).catch((e: Error) => e)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const stopping = performance.now()
    await other.stop()
    expect(performance.now() - stopping).toBeLessThan(1000)
    expect(await pending).toBeInstanceOf(Error)
  })

  it('hangAfterHeaders: sends 200 headers, then no body', async () => {
    fake.on('GET', '/markets', { hangAfterHeaders: true })
    const controller = new AbortController()
    const res = await fetch(`${fake.url}/markets`, { signal: controller.signal })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    const timer = setTimeout(() => controller.abort(), 300)
    const error = await res.text().catch((e: Error) => e)
    clearTimeout(timer)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).name).toBe('AbortError')
  })

  it('resetMidBody: writes part of a JSON body, then destroys the socket', async () => {
    fake.on('GET', '/markets', { resetMidBody: true })
    const res = await fetch(`${fake.url}/markets`)
    expect(res.status).toBe(200)
    await expect(res.text()).rejects.toThrow()
    await expect(rawRequest('GET', '/markets', { timeoutMs: 5000 })).rejects.toThrow(
      /aborted|socket|reset|close/i,
    )
  })

  it('raw: answers a non-JSON body with the given status and content type', async () => {
    fake.on('GET', '/markets', { raw: '<html>Bad Gateway</html>', status: 502 })
    const html = await fetch(`${fake.url}/markets`)
    expect(html.status).toBe(502)
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(await html.text()).toBe('<html>Bad Gateway</html>')
    fake.on('GET', '/tickers', { raw: '{"data": [1,', contentType: 'application/json' })
    const broken = await fetch(`${fake.url}/tickers`)
    expect(broken.status).toBe(200)
    expect(await broken.text()).toBe('{"data": [1,')
  })

  it('a function answer sees the recorded call and may answer any kind, also asynchronously', async () => {
    let seen: unknown
    fake.on('POST', '/conditions', async (call) => {
      seen = call
      await new Promise((resolve) => setTimeout(resolve, 10))
      return call.headers['x-user-id'] === '1'
        ? { status: 201, body: { data: call.body } }
        : { raw: 'nope', status: 500 }
    })
    const ok = await fetch(`${fake.url}/conditions`, {
      method: 'POST',
      headers: { 'x-user-id': '1', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'c' }),
    })
    expect(ok.status).toBe(201)
    expect(await ok.json()).toEqual({ data: { name: 'c' } })
    expect(seen).toMatchObject({ method: 'POST', path: '/conditions', body: { name: 'c' } })
    const other = await fetch(`${fake.url}/conditions`, { method: 'POST', headers: { 'x-user-id': '2' } })
    expect(other.status).toBe(500)
    expect(await other.text()).toBe('nope')
  })
})
