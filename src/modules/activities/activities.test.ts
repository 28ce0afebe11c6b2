import { describe, expect, it } from 'vitest'
import { TestClient } from '../../../test/helpers/client.ts'
import { grantCredits, signedInClient } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import type { Activity } from './activities.schemas.ts'

const t = appUnderTest()

const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const fieldError = (field: string, message: string) => ({ message, errors: { [field]: [message] } })
/** A payload whose compact JSON is exactly `bytes` long: `{"a":"xxx…"}`. */
const payloadOfSize = (bytes: number) => ({ a: 'x'.repeat(bytes - '{"a":""}'.length) })

describe('guards', () => {
  it('answers 401 to a guest and 419 to a write without the CSRF token', async () => {
    const guest = new TestClient(t.baseUrl)
    expect(await guest.get('/api/activities')).toMatchObject({
      status: 401,
      data: { message: 'Unauthenticated.' },
    })
    expect((await guest.post('/api/activities', { type: 'x' })).status).toBe(401)
    expect((await guest.delete('/api/activities/1')).status).toBe(401)
    const { client } = await signedInClient(t)
    const res = await client.post('/api/activities', { type: 'x' }, { withoutCsrf: true })
    expect(res).toMatchObject({ status: 419, data: { message: 'CSRF token mismatch.' } })
    expect((await client.get('/api/activities')).data).toEqual({ data: [] })
  })
})

describe('POST /api/activities', () => {
  it('stores a minimal activity and answers 200 with it, every optional field null', async () => {
    const { client, user } = await signedInClient(t)
    const res = await client.post('/api/activities', { type: 'order_placed' })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({
      id: expect.any(Number),
      user_id: user.id,
      type: 'order_placed',
      description: null,
      symbol: null,
      broker_account_hash: null,
      broker_order_id: null,
      advanced_order_type: null,
      payload: null,
      created_at: expect.stringMatching(DATE),
      updated_at: expect.stringMatching(DATE),
    })
    expect(res.data.created_at).toBe(t.clock.now().toISOString().replace(/Z$/, '000Z'))
    expect((await client.get('/api/activities')).data).toEqual({ data: [res.data] })
  })

  it('keeps every field, and the payload whole: nested objects, arrays, keys the schema never names', async () => {
    const { client } = await signedInClient(t)
    const body = {
      type: 'advanced_order',
      description: 'Bracket order on AAPL',
      symbol: 'AAPL',
      broker_account_hash: 'hash-123',
      broker_order_id: 'order-987',
      advanced_order_type: 'b'.repeat(32),
      payload: {
        side: 'buy',
        quantity: 10,
        legs: [{ type: 'stop', price: 182.5, tags: ['a', { deep: { deeper: true } }] }],
        meta: { none: null, unicode: 'Zoë 📈' },
      },
    }
    const res = await client.post('/api/activities', { ...body, user_id: 999_999, id: 5, unknown: 'dropped' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject(body)
    expect(res.data).not.toHaveProperty('unknown')
    expect(res.data.id).not.toBe(5)
    const [listed] = (await client.get('/api/activities')).data.data
    expect(listed).toEqual(res.data)
  })

  it('accepts null (or an empty string, read as null) for the optional fields', async () => {
    const { client } = await signedInClient(t)
    const res = await client.post('/api/activities', {
      type: 'note',
      description: null,
      symbol: '',
      advanced_order_type: null,
      payload: null,
    })
    expect(res).toMatchObject({ status: 200, data: { type: 'note', payload: null, symbol: null } })
  })

  it.each([
    ['no type', {}, fieldError('type', 'The type field is required.')],
    ['an empty type', { type: '' }, fieldError('type', 'The type field is required.')],
    [
      'a type over 64 characters',
      { type: 'x'.repeat(65) },
      fieldError('type', 'The type field must not be greater than 64 characters.'),
    ],
    [
      'an advanced_order_type over 32 characters',
      { type: 'order', advanced_order_type: 'x'.repeat(33) },
      fieldError(
        'advanced_order_type',
        'The advanced order type field must not be greater than 32 characters.',
      ),
    ],
    [
      'an array payload',
      { type: 'order', payload: [1, 2] },
      fieldError('payload', 'The payload field must be an object.'),
    ],
    [
      'a string payload',
      { type: 'order', payload: 'text' },
      fieldError('payload', 'The payload field must be an object.'),
    ],
    [
      'an object symbol',
      { type: 'order', symbol: { a: 1 } },
      fieldError('symbol', 'The symbol field must be a string.'),
    ],
  ])('refuses %s with a 422 and stores nothing', async (_label, body, expected) => {
    const { client } = await signedInClient(t)
    const res = await client.post('/api/activities', body)
    expect(res.status).toBe(422)
    expect(res.data).toEqual(expected)
    expect((await client.get('/api/activities')).data).toEqual({ data: [] })
  })

  it('accepts a payload of exactly 16 KiB as compact JSON and refuses one byte more', async () => {
    const { client } = await signedInClient(t)
    const limit = payloadOfSize(16 * 1024)
    expect(Buffer.byteLength(JSON.stringify(limit))).toBe(16_384)
    const ok = await client.post('/api/activities', { type: 'big', payload: limit })
    expect(ok.status).toBe(200)
    expect(ok.data.payload).toEqual(limit)

    const res = await client.post('/api/activities', {
      type: 'bigger',
      payload: payloadOfSize(16 * 1024 + 1),
    })
    expect(res.status).toBe(422)
    expect(res.data).toEqual(
      fieldError('payload', 'The payload field must not be greater than 16 kilobytes.'),
    )
    // UTF-8 bytes, not characters: 8,200 two-byte characters are over.
    const wide = await client.post('/api/activities', { type: 'wide', payload: { a: 'é'.repeat(8200) } })
    expect(wide.status).toBe(422)
    expect((await client.get('/api/activities')).data.data.map((a: Activity) => a.type)).toEqual(['big'])
  })

  it('refuses payloads jsonb cannot hold or nested past 32 levels with a 422, not a 500', async () => {
    const { client } = await signedInClient(t)
    const postRaw = (raw: string) =>
      client.post('/api/activities', undefined, { raw, headers: { 'content-type': 'application/json' } })
    const surrogate = await postRaw('{"type":"x","payload":{"\\ud800":1}}')
    expect(surrogate.status).toBe(422)
    expect(surrogate.data.errors).toEqual({
      payload: ['The payload field must not contain null bytes or unpaired surrogates.'],
    })
    const deep = await postRaw(`{"type":"x","payload":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`)
    expect(deep.status).toBe(422)
    expect(deep.data.errors).toEqual({
      payload: ['The payload field must not be nested more than 32 levels deep.'],
    })
    expect((await client.get('/api/activities')).data).toEqual({ data: [] })
  })

  it('never touches credits: the balance and the ledger stay as they were', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, '10.5')
    const credits = async () => (await client.get('/api/credits')).data
    const ledger = async () => (await client.get('/api/transaction-history')).data
    const [creditsBefore, ledgerBefore] = [await credits(), await ledger()]
    expect(creditsBefore).toMatchObject({ available_credits: 10.5, credits_available_for_automation: 10.5 })
    expect(ledgerBefore.total).toBe(1)

    for (const type of ['automated_order', 'order_filled', 'hold_capture']) {
      const res = await client.post('/api/activities', {
        type,
        advanced_order_type: 'oco',
        payload: { credits_amount: 5, broker_parent_order_id: 'parent-1' },
      })
      expect(res.status).toBe(200)
    }
    expect(await credits()).toEqual(creditsBefore)
    expect(await ledger()).toEqual(ledgerBefore)
  })
})

describe('GET /api/activities', () => {
  it("answers the user's own activities newest first, up to `limit` (default 50, 1..100)", async () => {
    const { client } = await signedInClient(t)
    const other = await signedInClient(t)
    await other.client.post('/api/activities', { type: 'someone-else' })
    for (let i = 1; i <= 55; i++) {
      await client.post('/api/activities', { type: `a${i}` })
      t.clock.advance(1000)
    }
    const all = await client.get('/api/activities')
    expect(all.status).toBe(200)
    expect(all.data.data).toHaveLength(50)
    expect(all.data.data[0].type).toBe('a55')
    expect(all.data.data[49].type).toBe('a6')
    const stamps = all.data.data.map((a: Activity) => a.created_at)
    expect([...stamps].sort().reverse()).toEqual(stamps)

    expect((await client.get('/api/activities?limit=2')).data.data.map((a: Activity) => a.type)).toEqual([
      'a55',
      'a54',
    ])
    expect((await client.get('/api/activities?limit=100')).data.data).toHaveLength(55)
    for (const bad of ['0', '101', 'abc', '-1']) {
      const res = await client.get(`/api/activities?limit=${bad}`)
      expect(res.status, bad).toBe(422)
      expect(Object.keys(res.data.errors)).toEqual(['limit'])
    }
    expect((await other.client.get('/api/activities')).data.data.map((a: Activity) => a.type)).toEqual([
      'someone-else',
    ])
  })
})

describe('DELETE /api/activities/{id}', () => {
  it('deletes one of the own activities (200), and is a 404 once it is gone', async () => {
    const { client } = await signedInClient(t)
    const kept = (await client.post('/api/activities', { type: 'kept' })).data
    const gone = (await client.post('/api/activities', { type: 'gone' })).data
    const res = await client.delete(`/api/activities/${gone.id}`)
    expect(res).toMatchObject({ status: 200, data: { message: 'Activity deleted.' } })
    expect((await client.get('/api/activities')).data).toEqual({ data: [kept] })
    const again = await client.delete(`/api/activities/${gone.id}`)
    expect(again.status).toBe(404)
    expect(again.data).toEqual({ message: `No query results for model [App\\Models\\Activity] ${gone.id}` })
  })

  it("answers 404 for another user's activity and leaves it alone", async () => {
    const owner = await signedInClient(t)
    const intruder = await signedInClient(t)
    const activity = (await owner.client.post('/api/activities', { type: 'mine' })).data
    const res = await intruder.client.delete(`/api/activities/${activity.id}`)
    expect(res.status).toBe(404)
    expect(res.data).toEqual({ message: `No query results for model [App\\Models\\Activity] ${activity.id}` })
    expect((await owner.client.get('/api/activities')).data).toEqual({ data: [activity] })
  })

  it('answers 404 {message} for ids that cannot name an activity', async () => {
    const { client } = await signedInClient(t)
    for (const id of ['abc', '0', '-1', '9'.repeat(40), '999999999']) {
      const res = await client.delete(`/api/activities/${id}`)
      expect(res.status, id).toBe(404)
      expect(typeof res.data.message).toBe('string')
    }
  })
})

describe('the ActivityLogged event', () => {
  it('fires once per stored activity, with the activity as answered, and not for a refused one', async () => {
    const { client, user } = await signedInClient(t)
    const seen: unknown[] = []
    const stop = t.app.events.on('ActivityLogged', (event) => {
      if (event.userId === user.id) seen.push(event)
    })
    try {
      const res = await client.post('/api/activities', {
        type: 'order_placed',
        symbol: 'MSFT',
        payload: { q: 1 },
      })
      expect(seen).toEqual([{ userId: user.id, activity: res.data }])
      await client.post('/api/activities', { type: 'x', advanced_order_type: 'y'.repeat(33) })
      expect(seen).toHaveLength(1)
    } finally {
      stop()
    }
  })

  it('a failing listener neither fails the request nor loses the activity', async () => {
    const { client } = await signedInClient(t)
    const stopThrowing = t.app.events.on('ActivityLogged', () => {
      throw new Error('listener broke')
    })
    const stopRejecting = t.app.events.on('ActivityLogged', async () => {
      throw new Error('async listener broke')
    })
    try {
      const res = await client.post('/api/activities', { type: 'still-logged' })
      expect(res.status).toBe(200)
      expect((await client.get('/api/activities')).data).toEqual({ data: [res.data] })
    } finally {
      stopThrowing()
      stopRejecting()
    }
  })
})
