import { beforeEach, describe, expect, it } from 'vitest'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { sessionCsrfToken } from '../../../../test/helpers/csrf.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import {
  cacheStates,
  STRATEGY_GROUP_READS,
  UNRELATED_READS,
  upstreamEnv,
} from '../../../../test/helpers/proxy.ts'
import { SPEC_STRATEGY_ACTIONS } from '../../../../test/helpers/spec-strategy-actions.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../../../test/helpers/under-test.ts'

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({ env: upstreamEnv(fake.url) }))
beforeEach(() => {
  fake.reset()
  // Every read answers who asked and what: an answer served to the wrong user would show it.
  fake.on('GET', /.*/, (call) => ({ body: { data: { path: call.path, user: call.headers['x-user-id'] } } }))
})

const ACTIONS = SPEC_STRATEGY_ACTIONS

describe('strategy CRUD', () => {
  it('creates: 201 {data}, the body forwarded whole', async () => {
    const { client, user } = await signedInClient(t)
    fake.on('POST', '/strategies', {
      status: 201,
      body: { data: { id: 'st-1', name: 'Breakout' }, meta: { x: 1 } },
    })
    const body = {
      name: 'Breakout',
      legs: [{ side: 'buy', qty: 2 }],
      risk: { stop: { pct: 1.5 } },
      extra: null,
    }
    const res = await client.post('/api/strategies', body)
    expect(res.status).toBe(201)
    expect(res.data).toEqual({ data: { id: 'st-1', name: 'Breakout' } })
    const [call] = fake.callsTo('POST', '/strategies')
    expect(call?.body).toEqual(body)
    expect(call?.headers['x-user-id']).toBe(String(user.id))
  })

  it('reads the list and one strategy as the upstream data member', async () => {
    const { client, user } = await signedInClient(t)
    expect((await client.get('/api/strategies')).data).toEqual({ path: '/strategies', user: String(user.id) })
    const one = await client.get('/api/strategies/st-9')
    expect(one.status).toBe(200)
    expect(one.data).toEqual({ path: '/strategies/st-9', user: String(user.id) })
  })

  it('updates: 200 {data} from a PUT with the body', async () => {
    const { client } = await signedInClient(t)
    fake.on('PUT', '/strategies/:id', (call) => ({ body: { data: { id: 'st-2', got: call.body } } }))
    const res = await client.put('/api/strategies/st-2', { name: 'Renamed' })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ data: { id: 'st-2', got: { name: 'Renamed' } } })
    expect(fake.calls.map((c) => `${c.method} ${c.path}`)).toEqual(['PUT /strategies/st-2'])
  })

  it('deletes: 204 with no body', async () => {
    const { client } = await signedInClient(t)
    fake.on('DELETE', '/strategies/:id', { status: 200, body: { data: null } })
    const res = await client.delete('/api/strategies/st-3')
    expect(res.status).toBe(204)
    expect(res.text).toBe('')
    expect(fake.calls.map((c) => `${c.method} ${c.path}`)).toEqual(['DELETE /strategies/st-3'])
  })

  it('searches by symbol, and reads a strategy’s conditions and activities', async () => {
    const { client } = await signedInClient(t)
    for (const path of ['/strategies/search/BTC%2FUSD', '/strategy/7/conditions', '/strategy/7/activities']) {
      const res = await client.get(`/api${path}`)
      expect(res.status).toBe(200)
      expect(res.data.path).toBe(path)
    }
  })

  it('clears condition readings with a POST and no body', async () => {
    const { client } = await signedInClient(t)
    fake.on('POST', '/strategy/:id/clear-conditions-readings', { body: { data: { cleared: 3 } } })
    const res = await client.post('/api/strategy/7/clear-conditions-readings', { ignored: true })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ cleared: 3 })
    expect(fake.calls).toHaveLength(1)
    expect(fake.calls[0]?.body).toBeUndefined()
  })
})

describe('free JSON bodies', () => {
  it('keep unknown members and nesting, and drop only the CSRF `_token`', async () => {
    const { client } = await signedInClient(t)
    fake.on('PUT', '/strategies/:id', { body: { data: 'ok' } })
    const token = await sessionCsrfToken(t, client)
    const body = { a: { b: { c: [1, { d: 'e' }] } }, 'odd key': true, zero: 0 }
    const res = await client.put('/api/strategies/1', { ...body, _token: token })
    expect(res.status).toBe(200)
    expect(fake.calls[0]?.body).toEqual(body)
  })

  it('refuse a body nested deeper than 32 levels with a 422, sending nothing', async () => {
    const { client } = await signedInClient(t)
    let deep: unknown = { leaf: true }
    for (let i = 0; i < 40; i++) deep = { a: deep }
    const res = await client.post('/api/strategies', deep)
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The body field must not be nested more than 32 levels deep.',
      errors: { body: ['The body field must not be nested more than 32 levels deep.'] },
    })
    expect(fake.calls).toHaveLength(0)
  })

  it('refuse a body over 256 KiB with a 413, and a body that is not an object with a 422', async () => {
    const { client } = await signedInClient(t)
    const big = await client.post('/api/strategy/1/deploy', { blob: 'x'.repeat(256 * 1024) })
    expect(big.status).toBe(413)
    expect(big.data).toEqual({ message: 'The request body is too large.' })
    const list = await client.post('/api/strategy/1/deploy', [1, 2])
    expect(list.status).toBe(422)
    expect(list.data.errors).toEqual({ body: ['The body field must be an object.'] })
    expect(fake.calls).toHaveLength(0)
  })
})

describe('the 35 strategy actions', () => {
  it('are exactly the spec’s list, each a session-guarded POST', () => {
    const registered = t.app.routeTable
      .filter((r) => r.url.startsWith('/api/strategy/:strategy/') && !r.url.endsWith('/conditions'))
      .filter((r) => !r.url.endsWith('/activities') && !r.url.endsWith('/clear-conditions-readings'))
    expect(registered.map((r) => r.url.replace('/api/strategy/:strategy/', '')).sort()).toEqual(
      [...ACTIONS].sort(),
    )
    expect(new Set(registered.map((r) => `${r.method} ${r.auth}`))).toEqual(new Set(['POST session']))
    expect(ACTIONS).toHaveLength(35)
  })

  it('each forwards its body to the same-named upstream path and answers the data member', async () => {
    const { client, user } = await signedInClient(t)
    fake.on('POST', /^\/strategy\//, (call) => ({ body: { data: { done: call.path } } }))
    for (const [i, suffix] of ACTIONS.entries()) {
      const res = await client.post(`/api/strategy/st-${i}/${suffix}`, { value: i, nested: { suffix } })
      expect(res.status).toBe(200)
      expect(res.data).toEqual({ done: `/strategy/st-${i}/${suffix}` })
    }
    expect(fake.calls.map((c) => [c.method, c.path, c.body, c.headers['x-user-id']])).toEqual(
      ACTIONS.map((suffix, i) => [
        'POST',
        `/strategy/st-${i}/${suffix}`,
        { value: i, nested: { suffix } },
        String(user.id),
      ]),
    )
  })
})

describe('per-user caching', () => {
  it('never serves user A’s cached strategies to user B', async () => {
    const a = await signedInClient(t)
    const b = await signedInClient(t)
    const first = await a.client.get('/api/strategies')
    expect(first.headers.get('x-cache')).toBe('MISS')
    expect((await a.client.get('/api/strategies')).headers.get('x-cache')).toBe('HIT')
    const theirs = await b.client.get('/api/strategies')
    expect(theirs.headers.get('x-cache')).toBe('MISS')
    expect(theirs.data).toEqual({ path: '/strategies', user: String(b.user.id) })
    expect(fake.calls.map((c) => c.headers['x-user-id'])).toEqual([String(a.user.id), String(b.user.id)])
  })
})

/** Two users with every related read cached, plus A's unrelated reads. */
async function warmUsers(): Promise<{ a: TestClient; b: TestClient }> {
  const { client: a } = await signedInClient(t)
  const { client: b } = await signedInClient(t)
  for (const client of [a, b]) await cacheStates(client, STRATEGY_GROUP_READS)
  await cacheStates(a, UNRELATED_READS)
  return { a, b }
}

const allHit = STRATEGY_GROUP_READS.map(() => 'HIT')
const allMiss = STRATEGY_GROUP_READS.map(() => 'MISS')

describe('a strategy write or action', () => {
  const writes: [string, (c: TestClient) => Promise<{ status: number }>, number][] = [
    ['a create', (c) => c.post('/api/strategies', { name: 'n' }), 201],
    ['an update', (c) => c.put('/api/strategies/1', { name: 'n' }), 200],
    ['a delete', (c) => c.delete('/api/strategies/1'), 204],
    ['an action', (c) => c.post('/api/strategy/1/status/off', {}), 200],
    ['clearing condition readings', (c) => c.post('/api/strategy/1/clear-conditions-readings'), 200],
  ]

  it.each(writes)(
    '%s clears the writer’s related reads at once, and no one else’s',
    async (_name, write, status) => {
      fake.on('*', /^\/strateg/, (call) => ({
        status: call.method === 'POST' && call.path === '/strategies' ? 201 : 200,
        body: { data: {} },
      }))
      const { a, b } = await warmUsers()
      expect((await write(a)).status).toBe(status)
      expect(await cacheStates(a, STRATEGY_GROUP_READS)).toEqual(allMiss)
      expect(await cacheStates(b, STRATEGY_GROUP_READS)).toEqual(allHit)
      expect(await cacheStates(a, UNRELATED_READS)).toEqual(['HIT', 'HIT'])
    },
  )

  it('clears them when the upstream refuses it too', async () => {
    const { a, b } = await warmUsers()
    fake.on('POST', /^\/strategy\//, { status: 503, body: { message: 'busy' } })
    const res = await a.post('/api/strategy/1/deploy', {})
    expect(res.status).toBe(500)
    expect(res.data).toEqual({ error: 'Upstream request failed with status 503' })
    expect(await cacheStates(a, STRATEGY_GROUP_READS)).toEqual(allMiss)
    expect(await cacheStates(b, STRATEGY_GROUP_READS)).toEqual(allHit)
  })

  it('leaves everything cached when it is refused before reaching the upstream', async () => {
    const { a } = await warmUsers()
    const calls = fake.calls.length
    expect((await a.post('/api/strategy/1/deploy', [1])).status).toBe(422)
    expect(fake.calls).toHaveLength(calls)
    expect(await cacheStates(a, STRATEGY_GROUP_READS)).toEqual(allHit)
  })
})
