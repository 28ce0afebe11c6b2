import { beforeEach, describe, expect, it } from 'vitest'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { cacheStates, STRATEGY_GROUP_READS, upstreamEnv } from '../../../../test/helpers/proxy.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../../../test/helpers/under-test.ts'

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({ env: upstreamEnv(fake.url) }))
beforeEach(() => {
  fake.reset()
  fake.on('GET', /.*/, (call) => ({ body: { data: { path: call.path, user: call.headers['x-user-id'] } } }))
  fake.on('POST', '/conditions', (call) => ({
    status: 201,
    body: { data: { id: 'c-1', ...(call.body as object) } },
  }))
  fake.on('PUT', '/conditions/:id', (call) => ({ body: { data: { id: 'c-1', ...(call.body as object) } } }))
  fake.on('DELETE', '/conditions/:id', { status: 204, body: undefined })
})

describe('conditions', () => {
  it('create (201 {data}), read, update (200 {data}) and delete (204) through the upstream', async () => {
    const { client, user } = await signedInClient(t)
    const created = await client.post('/api/conditions', { strategy_id: 's-1', rule: { above: 100 } })
    expect(created.status).toBe(201)
    expect(created.data).toEqual({ data: { id: 'c-1', strategy_id: 's-1', rule: { above: 100 } } })
    const list = await client.get('/api/conditions')
    expect(list.data).toEqual({ path: '/conditions', user: String(user.id) })
    expect((await client.get('/api/conditions/c-1')).data).toEqual({
      path: '/conditions/c-1',
      user: String(user.id),
    })
    const updated = await client.put('/api/conditions/c-1', { rule: { below: 5 } })
    expect(updated.status).toBe(200)
    expect(updated.data).toEqual({ data: { id: 'c-1', rule: { below: 5 } } })
    const deleted = await client.delete('/api/conditions/c-1')
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe('')
    expect(fake.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'POST /conditions',
      'GET /conditions',
      'GET /conditions/c-1',
      'PUT /conditions/c-1',
      'DELETE /conditions/c-1',
    ])
  })

  it('answer 500 {"error"} when the upstream fails a write', async () => {
    const { client } = await signedInClient(t)
    fake.on('POST', '/conditions', { raw: 'oops' })
    const res = await client.post('/api/conditions', {})
    expect(res.status).toBe(500)
    expect(res.data).toEqual({ error: 'Upstream answered with invalid JSON' })
  })
})

describe('signals', () => {
  it('are read per user and cached', async () => {
    const { client, user } = await signedInClient(t)
    const first = await client.get('/api/signals')
    expect(first.data).toEqual({ path: '/signals', user: String(user.id) })
    expect(first.headers.get('x-cache')).toBe('MISS')
    expect((await client.get('/api/signals')).headers.get('x-cache')).toBe('HIT')
    expect(fake.calls).toHaveLength(1)
  })
})

describe('a condition write', () => {
  const allHit = STRATEGY_GROUP_READS.map(() => 'HIT')
  const allMiss = STRATEGY_GROUP_READS.map(() => 'MISS')
  const writes: [string, (c: TestClient) => Promise<{ status: number }>][] = [
    ['a create', (c) => c.post('/api/conditions', { rule: 1 })],
    ['an update', (c) => c.put('/api/conditions/c-1', { rule: 2 })],
    ['a delete', (c) => c.delete('/api/conditions/c-1')],
  ]

  it.each(writes)(
    '%s clears the writer’s strategy, condition and signal reads, and no one else’s',
    async (_name, write) => {
      const { client: a } = await signedInClient(t)
      const { client: b } = await signedInClient(t)
      for (const client of [a, b]) await cacheStates(client, STRATEGY_GROUP_READS)
      expect(await cacheStates(a, STRATEGY_GROUP_READS)).toEqual(allHit)
      expect((await write(a)).status).toBeLessThan(300)
      expect(await cacheStates(a, STRATEGY_GROUP_READS)).toEqual(allMiss)
      expect(await cacheStates(b, STRATEGY_GROUP_READS)).toEqual(allHit)
    },
  )
})
