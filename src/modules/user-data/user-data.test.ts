import { describe, expect, it } from 'vitest'
import { TestClient } from '../../../test/helpers/client.ts'
import { sessionCsrfToken } from '../../../test/helpers/csrf.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'

const t = appUnderTest()

const kinds = ['onboarding', 'preferences', 'settings'] as const
const notAnObject = {
  message: 'The body field must be an object.',
  errors: { body: ['The body field must be an object.'] },
}
const bodyError = (message: string) => ({ message, errors: { body: [message] } })

/** A document whose compact JSON is exactly `bytes` long: `{"a":"xxx…"}`. */
const documentOfSize = (bytes: number) => ({ a: 'x'.repeat(bytes - '{"a":""}'.length) })

describe.each(kinds)('/api/user/%s', (kind) => {
  const path = `/api/user/${kind}`

  it('answers 401 to a guest, and 419 to a write without the CSRF token', async () => {
    const guest = new TestClient(t.baseUrl)
    expect(await guest.get(path)).toMatchObject({ status: 401, data: { message: 'Unauthenticated.' } })
    expect(await guest.post(path, { a: 1 })).toMatchObject({
      status: 401,
      data: { message: 'Unauthenticated.' },
    })
    const { client } = await signedInClient(t)
    const res = await client.post(path, { a: 1 }, { withoutCsrf: true })
    expect(res).toMatchObject({ status: 419, data: { message: 'CSRF token mismatch.' } })
    expect((await client.get(path)).data).toEqual({})
  })

  it('answers {} before the first save', async () => {
    const { client } = await signedInClient(t)
    const res = await client.get(path)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(res.data).toEqual({})
  })

  it('POST replaces the whole object and answers it back; GET then answers the same', async () => {
    const { client } = await signedInClient(t)
    const first = {
      step: 3,
      completed: ['profile', 'broker'],
      nested: { theme: 'dark', ratio: 0.25, flags: { beta: true, none: null } },
      name: 'Zoë 📈 "quoted" \\ slash',
    }
    const saved = await client.post(path, first)
    expect(saved.status).toBe(200)
    expect(saved.data).toEqual(first)
    expect((await client.get(path)).data).toEqual(first)

    // A second save replaces rather than merges: keys left out are gone.
    const second = { step: 4 }
    expect((await client.post(path, second)).data).toEqual(second)
    expect((await client.get(path)).data).toEqual(second)
  })

  it('an empty body saves an empty object', async () => {
    const { client } = await signedInClient(t)
    await client.post(path, { a: 1 })
    const res = await client.post(path, undefined)
    expect(res).toMatchObject({ status: 200, data: {} })
    expect((await client.get(path)).data).toEqual({})
  })

  it.each([
    ['an array', [{ a: 1 }]],
    ['an empty array', []],
    ['a string', 'hello'],
    ['a number', 42],
    ['a boolean', true],
  ])('refuses %s with a 422 on body, and keeps what was saved', async (_label, body) => {
    const { client } = await signedInClient(t)
    await client.post(path, { kept: true })
    const res = await client.post(path, body)
    expect(res.status).toBe(422)
    expect(res.data).toEqual(notAnObject)
    expect((await client.get(path)).data).toEqual({ kept: true })
  })
})

describe('POST /api/user/{kind} limits', () => {
  const path = '/api/user/preferences'

  it('accepts a document of exactly 64 KiB as compact JSON and refuses one byte more', async () => {
    const { client } = await signedInClient(t)
    const limit = documentOfSize(64 * 1024)
    expect(Buffer.byteLength(JSON.stringify(limit))).toBe(65536)
    const ok = await client.post(path, limit)
    expect(ok.status).toBe(200)
    expect(ok.data).toEqual(limit)

    const res = await client.post(path, documentOfSize(64 * 1024 + 1))
    expect(res.status).toBe(422)
    expect(res.data).toEqual(bodyError('The body field must not be greater than 64 kilobytes.'))
    expect((await client.get(path)).data).toEqual(limit)
  })

  it('counts UTF-8 bytes, not characters', async () => {
    const { client } = await signedInClient(t)
    // 30,000 two-byte characters: 30,008 characters but 60,008 bytes, under the limit; 35,000 are over.
    expect((await client.post(path, { a: 'é'.repeat(30_000) })).status).toBe(200)
    const res = await client.post(path, { a: 'é'.repeat(35_000) })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ body: ['The body field must not be greater than 64 kilobytes.'] })
  })

  it('measures the compact document, so pretty-printed JSON that fits is accepted', async () => {
    const { client } = await signedInClient(t)
    const document = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`key${i}`, i]))
    const pretty = JSON.stringify(document, null, 10)
    expect(Buffer.byteLength(pretty)).toBeGreaterThan(64 * 1024)
    expect(Buffer.byteLength(JSON.stringify(document))).toBeLessThan(64 * 1024)
    const res = await client.post(path, undefined, {
      raw: pretty,
      headers: { 'content-type': 'application/json' },
    })
    expect(res.status).toBe(200)
    expect(res.data).toEqual(document)
  })

  it('refuses a raw body over 128 KiB with 413 before reading it', async () => {
    const { client } = await signedInClient(t)
    await client.post(path, { kept: 1 })
    const res = await client.post(path, documentOfSize(128 * 1024 + 1))
    expect(res.status).toBe(413)
    expect(res.data).toEqual({ message: 'The request body is too large.' })
    expect((await client.get(path)).data).toEqual({ kept: 1 })
  })

  it('refuses text PostgreSQL cannot store (null bytes, unpaired surrogates) with a 422, keeping the old', async () => {
    const { client } = await signedInClient(t)
    await client.post(path, { kept: 1 })
    const postRaw = (raw: string) =>
      client.post(path, undefined, { raw, headers: { 'content-type': 'application/json' } })
    const message = 'The body field must not contain null bytes or unpaired surrogates.'
    for (const raw of ['{"a\\u0000":1}', '{"a":["\\ud800"]}', '{"a":{"\\udc00":1}}', '{"\\ud800":1}']) {
      const res = await postRaw(raw)
      expect(res.status, raw).toBe(422)
      expect(res.data).toEqual(bodyError(message))
    }
    // A null byte in a value is refused by the body plugin for every route, naming the field.
    const nul = await postRaw('{"a":{"b":"x\\u0000y"}}')
    expect(nul.status).toBe(422)
    expect(Object.keys(nul.data.errors)).toEqual(['a.b'])
    expect((await client.get(path)).data).toEqual({ kept: 1 })
    // A paired surrogate (an emoji written as escapes) is fine.
    expect((await postRaw('{"a":"\\ud83d\\udcc8"}')).data).toEqual({ a: '📈' })
  })

  it('accepts nesting 100 levels deep and refuses 101', async () => {
    const { client } = await signedInClient(t)
    const nest = (levels: number) => {
      let value: unknown = 1
      for (let i = 1; i < levels; i++) value = i % 2 ? { n: value } : [value]
      return { top: value }
    }
    // `{top: …}` is level 1; each wrapper adds one.
    expect((await client.post(path, nest(100))).status).toBe(200)
    const res = await client.post(path, nest(101))
    expect(res.status).toBe(422)
    expect(res.data).toEqual(bodyError('The body field must not be nested more than 100 levels deep.'))
    expect((await client.get(path)).data).toEqual(nest(100))

    // Far deeper, within the body limit: still a 422, not a stack overflow.
    const raw = `{"a":${'['.repeat(60_000)}${']'.repeat(60_000)}}`
    const deep = await client.post(path, undefined, { raw, headers: { 'content-type': 'application/json' } })
    expect(deep.status).toBe(422)
    expect(deep.data.errors).toEqual({
      body: ['The body field must not be nested more than 100 levels deep.'],
    })
  })

  it('a _token field (the CSRF token of a form post) is not stored', async () => {
    const { client } = await signedInClient(t)
    const token = await sessionCsrfToken(t, client)
    const res = await client.post(path, { _token: token, theme: 'dark' }, { withoutCsrf: true })
    expect(res).toMatchObject({ status: 200, data: { theme: 'dark' } })
    expect((await client.get(path)).data).toEqual({ theme: 'dark' })
  })
})

describe('user data belongs to its user', () => {
  it("one user's saves are invisible to another, and another's saves never change them", async () => {
    const ada = await signedInClient(t)
    const bob = await signedInClient(t)
    await ada.client.post('/api/user/settings', { owner: 'ada' })
    await ada.client.post('/api/user/onboarding', { step: 2 })

    expect((await bob.client.get('/api/user/settings')).data).toEqual({})
    expect((await bob.client.get('/api/user/onboarding')).data).toEqual({})

    // Naming Ada in the body, the query or a header addresses nothing: it is only Bob's data.
    const res = await bob.client.post(`/api/user/settings?user_id=${ada.user.id}`, {
      user_id: ada.user.id,
      owner: 'bob',
    })
    expect(res.data).toEqual({ user_id: ada.user.id, owner: 'bob' })
    expect((await bob.client.get(`/api/user/settings?user_id=${ada.user.id}`)).data).toEqual(res.data)

    expect((await ada.client.get('/api/user/settings')).data).toEqual({ owner: 'ada' })
    expect((await ada.client.get('/api/user/onboarding')).data).toEqual({ step: 2 })
  })

  it('the three kinds are separate documents', async () => {
    const { client } = await signedInClient(t)
    await client.post('/api/user/onboarding', { kind: 'onboarding' })
    await client.post('/api/user/preferences', { kind: 'preferences' })
    expect((await client.get('/api/user/onboarding')).data).toEqual({ kind: 'onboarding' })
    expect((await client.get('/api/user/preferences')).data).toEqual({ kind: 'preferences' })
    expect((await client.get('/api/user/settings')).data).toEqual({})
  })

  it('signing out and back in keeps the data, and a signed-out client reads nothing', async () => {
    const { client, user, password } = await signedInClient(t)
    await client.post('/api/user/preferences', { chart: 'candles' })
    await client.post('/api/logout')
    expect((await client.get('/api/user/preferences')).status).toBe(401)
    await client.post('/api/login', { email: user.email, password })
    expect((await client.get('/api/user/preferences')).data).toEqual({ chart: 'candles' })
  })
})
