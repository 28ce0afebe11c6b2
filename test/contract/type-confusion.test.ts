import { count } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { aiCalls, outbox, users } from '../../src/db/schema/index.ts'
import { TestClient } from '../helpers/client.ts'
import { signedInClient, uniqueEmail } from '../helpers/factories.ts'
import { appUnderTest } from '../helpers/under-test.ts'

/**
 * JSON values of the wrong type are refused before anything happens: a route never sees an array's
 * first item as the string it wanted, nor a number made into one. The bad-input walker sends such a
 * variant of every field of every operation; these are the cases a review found reaching handlers.
 */
const t = appUnderTest()

const rows = async (table: typeof outbox | typeof aiCalls | typeof users) =>
  (await t.database.db.select({ n: count() }).from(table))[0]?.n ?? 0

describe('JSON values of the wrong type', () => {
  it('an array as the email of a forgotten password is a 422, and no work is queued', async () => {
    const before = await rows(outbox)
    for (const email of [[uniqueEmail()], [uniqueEmail(), uniqueEmail()], { email: uniqueEmail() }, 42]) {
      const res = await new TestClient(t.baseUrl).post('/api/password/email', { email })
      expect(res.status, JSON.stringify(email)).toBe(422)
      expect(res.data.errors.email).toEqual(['The email field must be a string.'])
    }
    expect(await rows(outbox)).toBe(before)
  })

  it('a number or an array of one where a string belongs is a 422, not "12345" stored', async () => {
    const before = await rows(users)
    for (const name of [12345, true, ['Ada'], {}]) {
      const res = await new TestClient(t.baseUrl).post('/api/register', {
        name,
        email: uniqueEmail(),
        password: 'correct horse battery',
      })
      expect(res.status, JSON.stringify(name)).toBe(422)
      expect(res.data.errors).toEqual({ name: ['The name field must be a string.'] })
    }
    expect(await rows(users)).toBe(before)
  })

  it('a string where a number or a boolean belongs is a 422 in JSON; a form still sends text', async () => {
    const { client, user, password } = await signedInClient(t)
    const asJson = await client.post('/api/login', { email: user.email, password, remember: 'true' })
    expect(asJson.status).toBe(422)
    expect(asJson.data.errors).toEqual({ remember: ['The remember field must be true or false.'] })
    const asForm = await client.post('/api/login', undefined, {
      raw: new URLSearchParams({ email: user.email, password, remember: 'true' }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    expect(asForm.status).toBe(200)
  })

  it('a number as the text of an assistant message part is a 422, and no stream starts', async () => {
    const before = await rows(aiCalls)
    const res = await new TestClient(t.baseUrl).post('/api/ai/agents/support', {
      messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 12345 }] }],
    })
    expect(res.status).toBe(422)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(res.data.errors).toEqual({
      'messages.0.parts.0.text': ['The messages.0.parts.0.text field must be a string.'],
    })
    expect(await rows(aiCalls)).toBe(before)
  })

  it('an empty string for a nullable field still clears it, as Laravel reads "" as null', async () => {
    const { client, user } = await signedInClient(t)
    const res = await client.put('/api/user-profile/profile', {
      name: user.name,
      email: user.email,
      timezone: '',
      country: null,
    })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ timezone: null, country: null })
  })

  it('a profile photo posted beside a field named after an Object.prototype member is a 422, and the photo is not stored', async () => {
    const { client } = await signedInClient(t)
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
      'base64',
    )
    for (const name of ['toString', 'hasOwnProperty', 'constructor', '__proto__']) {
      const form = new FormData()
      form.append('photo', new Blob([png], { type: 'image/png' }), 'me.png')
      form.append(name, 'x')
      const request = new Request('http://multipart.invalid/', { method: 'POST', body: form })
      const res = await client.post('/api/user-profile/profile-photo', undefined, {
        raw: Buffer.from(await request.arrayBuffer()),
        headers: { 'content-type': request.headers.get('content-type') ?? '' },
      })
      expect(res.status, name).toBe(422)
      expect((await client.get('/api/user')).data.profile_photo_url).toBeNull()
    }
  })
})
