import { eq } from 'drizzle-orm'
import { beforeAll, describe, expect, it } from 'vitest'
import { createGroup } from '../../test/helpers/chat.ts'
import type { TestClient } from '../../test/helpers/client.ts'
import { signedInClient, uniqueEmail } from '../../test/helpers/factories.ts'
import { type FormPairs, formEncoded, multipartForm, type RawBody } from '../../test/helpers/forms.ts'
import { upstreamEnv } from '../../test/helpers/proxy.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../test/helpers/under-test.ts'
import { chatMessages } from '../db/schema/index.ts'

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({ env: upstreamEnv(fake.url) }))
let client: TestClient
beforeAll(async () => {
  ;({ client } = await signedInClient(t, { verified: true }))
})

const send = (who: TestClient, method: string, path: string, body: RawBody) =>
  who.request(method, path, undefined, { raw: body.payload, headers: { 'content-type': body.contentType } })
const json = (text: string): RawBody => ({ payload: text, contentType: 'application/json' })
const prohibited = (...paths: string[]) =>
  Object.fromEntries(paths.map((path) => [path, [`The ${path} field is prohibited.`]]))

describe('prototype keys (__proto__, constructor, prototype) in a body', () => {
  // A user document is stored as jsonb whatever its members are: nothing guards it but this.
  const documentPath = '/api/user/preferences'

  it.each([
    ['__proto__', '{"__proto__": {"is_admin": true}, "theme": "dark"}', ['__proto__']],
    ['constructor.prototype', '{"constructor": {"prototype": {"is_admin": true}}}', ['constructor']],
    ['a nested prototype', '{"layout": {"panes": [{"prototype": 1}]}}', ['layout.panes.0.prototype']],
    ['a nested constructor', '{"theme": "dark", "layout": {"constructor": "x"}}', ['layout.constructor']],
  ])('refuses JSON holding %s with a 422 naming it, and stores nothing', async (_label, text, paths) => {
    const { client: owner } = await signedInClient(t)
    const res = await send(owner, 'POST', documentPath, json(text))
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: `The ${paths[0]} field is prohibited.`,
      errors: prohibited(...paths),
    })
    expect((await owner.get(documentPath)).data).toEqual({})
  })

  it.each([
    ['__proto__', [['__proto__', 'x']]],
    ['constructor', [['constructor', 'x']]],
    ['prototype', [['prototype', 'x']]],
  ] as [string, FormPairs][])(
    'refuses a form-encoded body holding %s with a 422, storing nothing',
    async (key, pairs) => {
      const { client: owner } = await signedInClient(t)
      const res = await send(owner, 'POST', documentPath, formEncoded([['theme', 'dark'], ...pairs]))
      expect(res.status).toBe(422)
      expect(res.data.errors).toEqual(prohibited(key))
      expect((await owner.get(documentPath)).data).toEqual({})
    },
  )

  it('never forwards one to the upstream, in JSON or in a form', async () => {
    fake.reset()
    for (const body of [
      json('{"name": "Breakout", "constructor": {"prototype": {"polluted": true}}}'),
      json('{"name": "Breakout", "rules": [{"__proto__": {"polluted": true}}]}'),
      formEncoded([
        ['name', 'Breakout'],
        ['__proto__', 'polluted'],
      ]),
      formEncoded([
        ['name', 'Breakout'],
        ['prototype', 'polluted'],
      ]),
    ]) {
      const res = await send(client, 'POST', '/api/strategies', body)
      expect(res.status, body.payload.toString()).toBe(422)
    }
    expect(fake.calls).toEqual([])
  })

  it('refuses one as a multipart field name with a 422, storing no message', async () => {
    const group = await createGroup(client)
    const base: FormPairs = [
      ['group_id', String(group.id)],
      ['body', 'hello'],
    ]
    for (const name of ['__proto__', 'constructor']) {
      // @fastify/multipart refuses these before their name reaches the app.
      const res = await send(client, 'POST', '/api/message', multipartForm([...base, [name, 'x']]))
      expect(res.status, name).toBe(422)
      expect(Object.keys(res.data.errors), name).toEqual(['form'])
    }
    const res = await send(client, 'POST', '/api/message', multipartForm([...base, ['prototype', 'x']]))
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual(prohibited('prototype'))
    const stored = () => t.database.db.select().from(chatMessages).where(eq(chatMessages.groupId, group.id))
    expect(await stored()).toEqual([])
    // The same form without them is a message.
    expect((await send(client, 'POST', '/api/message', multipartForm(base))).status).toBe(201)
    expect(await stored()).toHaveLength(1)
  })

  it('refuses one beside a profile photo with a 422', async () => {
    const res = await send(
      client,
      'POST',
      '/api/user-profile/profile-photo',
      multipartForm([['__proto__', 'x']]),
    )
    expect(res.status).toBe(422)
  })

  it('still accepts keys that merely contain the words', async () => {
    const { client: owner } = await signedInClient(t)
    const document = { proto: 1, constructor_name: 'x', prototypes: ['a'], _proto: { Constructor: 1 } }
    const res = await owner.post(documentPath, document)
    expect(res.status).toBe(200)
    expect((await owner.get(documentPath)).data).toEqual(document)
  })
})

describe('form-encoded bodies, read as JSON bodies are', () => {
  it('are trimmed and refuse a NUL byte with a 422, not a 500 at the insert', async () => {
    const email = uniqueEmail('form')
    const password = 'long enough secret'
    const fields = (name: string): FormPairs => [
      ['name', name],
      ['email', `  ${email}  `],
      ['password', password],
      ['password_confirmation', password],
    ]
    const guest = (await signedInClient(t)).client
    await guest.post('/api/logout')
    const nul = await send(guest, 'POST', '/api/register', formEncoded(fields('Nul\u0000Name')))
    expect(nul.status).toBe(422)
    expect(nul.data.errors).toEqual({ name: ['The name field must not contain null bytes.'] })

    const res = await send(guest, 'POST', '/api/register', formEncoded(fields('  Form Trader  ')))
    expect(res.status).toBe(201)
    expect(res.data).toMatchObject({ name: 'Form Trader', email })
  })
})
