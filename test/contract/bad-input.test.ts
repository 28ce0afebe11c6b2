import multipart from '@fastify/multipart'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { count } from 'drizzle-orm'
import { Type } from 'typebox'
import { beforeAll, describe, expect, it } from 'vitest'
import { users } from '../../src/db/schema/index.ts'
import { commonErrorResponses } from '../../src/lib/http-schemas.ts'
import {
  type BadInputCase,
  badInputCases,
  type CaseKind,
  type Operation,
  operationsWithInput,
  walk,
} from '../helpers/bad-input.ts'
import type { TestApp } from '../helpers/build-test-app.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../helpers/under-test.ts'

/**
 * Every operation of the OpenAPI document that takes input gets malformed bodies, queries and
 * paths derived from its own schemas, so routes added later are walked without touching this file.
 */

// The walk grows with every route added; it is slow by nature, not by accident.
const WALK_TIMEOUT = 300_000

async function documentOf(t: TestApp): Promise<unknown> {
  const res = await fetch(`${t.baseUrl}/api/openapi.json`)
  expect(res.status).toBe(200)
  return res.json()
}

const userCount = async (t: TestApp) => (await t.database.db.select({ n: count() }).from(users))[0]?.n ?? 0

const kindsOf = (cases: BadInputCase[], operation: string) =>
  new Set(cases.filter((c) => c.operation === operation).map((c) => c.kind))

describe('bad input to every operation of the OpenAPI document', () => {
  // An upstream that accepts everything, so a proxied route's answer to input its schemas let
  // through shows the route's own handling, not an upstream failure (500 {"error"} by the spec).
  const upstream = fakeUpstreamUnderTest()
  const t = appUnderTest(() => ({
    env: { UPSTREAM_BASE_URL: upstream.url, UPSTREAM_API_TOKEN: 'walker-token' },
  }))
  let operations: Operation[]
  let cases: BadInputCase[]
  beforeAll(async () => {
    upstream.on('*', /.*/, { body: { data: {}, links: {}, meta: {} } })
    operations = await operationsWithInput(await documentOf(t))
    cases = operations.flatMap(badInputCases)
  })

  it('finds the operations that take input and derives cases of each kind from their schemas', () => {
    const ids = operations.map((op) => op.id)
    expect(ids).toEqual(expect.arrayContaining(['POST /api/register', 'POST /api/login']))
    for (const op of operations) expect(cases.some((c) => c.operation === op.id)).toBe(true)
    expect([...kindsOf(cases, 'POST /api/register')].sort()).toEqual([
      'body',
      'form',
      'missing',
      'multipart',
      'nul',
      'oversized',
      'wrong-type',
    ])
    const register = cases.filter((c) => c.operation === 'POST /api/register')
    expect(register.filter((c) => c.kind === 'missing').map((c) => c.label)).toEqual([
      'name left out',
      'email left out',
      'password left out',
    ])
    expect(register.find((c) => c.label === 'email = an object')?.invalid).toBe(true)
    expect(register.find((c) => c.label === 'password = 100k characters')?.invalid).toBe(true)
    for (const kind of ['body', 'form', 'multipart'] as const) {
      const prototypeKeys = register.filter(
        (c) => c.kind === kind && /(carries|named) (__proto__|constructor|prototype)$/.test(c.label),
      )
      expect(
        prototypeKeys.map((c) => c.invalid),
        kind,
      ).toEqual([true, true, true])
    }
    // Every operation with a body is also sent as a form and as multipart.
    for (const op of operations.filter((o) => o.form)) {
      expect([...kindsOf(cases, op.id)], op.id).toEqual(expect.arrayContaining(['form', 'multipart']))
    }
    // Routes that read multipart forms get every field's variants there too, files included.
    const invalidLabels = (operation: string, kind: CaseKind) =>
      cases.filter((c) => c.operation === operation && c.kind === kind && c.invalid).map((c) => c.label)
    expect(invalidLabels('POST /api/user-profile/profile-photo', 'multipart')).toEqual(
      expect.arrayContaining([
        'photo = text instead of a file',
        'a field named prototype',
        'a file named prototype',
      ]),
    )
    expect(invalidLabels('POST /api/message', 'multipart')).toEqual(
      expect.arrayContaining(['attachments = text instead of a file', 'body = a file', 'group_id = a word']),
    )
    expect(invalidLabels('POST /api/message', 'form')).toEqual(expect.arrayContaining(['group_id left out']))
    expect(invalidLabels('POST /api/message', 'wrong-type')).toContain(
      'group_id = an array holding a valid value',
    )
  })

  it(
    'answers every request its schemas refuse with a 4xx in Laravel JSON, and stores nothing',
    async () => {
      const invalid = cases.filter((c) => c.invalid)
      expect(invalid.length).toBeGreaterThan(50)
      const before = await userCount(t)
      const result = await walk(t, invalid)
      expect(result.violations).toEqual([])
      // Only the admins the walker signed in with were added: no invalid registration got through.
      expect(await userCount(t)).toBe(before + result.usersCreated)
      // Validation answered, not a throttle or a guard.
      const signIn = result.answers.filter((a) =>
        ['POST /api/register', 'POST /api/login'].includes(a.case.operation),
      )
      const validated = signIn.filter((a) => a.case.kind === 'missing' || a.case.kind === 'wrong-type')
      expect(validated.length).toBeGreaterThan(5)
      expect(validated.filter((a) => a.status !== 422).map((a) => `${a.case.label}: ${a.status}`)).toEqual([])
      // A prototype key is a 422 whether the body is JSON, a form or (where taken) multipart.
      const takesMultipart = new Set(operations.filter((op) => op.takesMultipart).map((op) => op.id))
      expect([...takesMultipart].sort()).toEqual([
        'POST /api/message',
        'POST /api/user-profile/profile-photo',
      ])
      const prototypeKeys = result.answers.filter(
        (a) =>
          /(carries|named) (__proto__|constructor|prototype)$/.test(a.case.label) &&
          (a.case.kind !== 'multipart' || takesMultipart.has(a.case.operation)),
      )
      expect(prototypeKeys.length).toBeGreaterThan(100)
      expect(
        prototypeKeys
          .filter((a) => a.status !== 422)
          .map((a) => `${a.case.operation} ${a.case.label}: ${a.status}`),
      ).toEqual([])
      // A file and text are not each other: refused by the field's rule, not by the parser.
      const misplaced = result.answers.filter((a) => / = (a file|text instead of a file)$/.test(a.case.label))
      expect(misplaced.length).toBeGreaterThanOrEqual(4)
      expect(misplaced.filter((a) => a.status !== 422).map((a) => `${a.case.label}: ${a.status}`)).toEqual([])
    },
    WALK_TIMEOUT,
  )

  it(
    'never answers a 5xx to values its schemas let through (NUL bytes, deep nesting, odd paths)',
    async () => {
      const allowed = cases.filter((c) => !c.invalid)
      expect(allowed.length).toBeGreaterThan(0)
      const result = await walk(t, allowed)
      expect(result.violations).toEqual([])
      // PostgreSQL cannot store a NUL byte: it is a field error, not a failed insert.
      const nul = result.answers.find(
        (a) => a.case.operation === 'POST /api/register' && a.case.label === 'name with a NUL byte',
      )
      expect(nul?.status).toBe(422)
      // So is one in a form, which is read as JSON is.
      const formNul = result.answers.find(
        (a) =>
          a.case.operation === 'POST /api/register' &&
          a.case.kind === 'form' &&
          a.case.label === 'name with a NUL byte',
      )
      expect(formNul?.status).toBe(422)
    },
    WALK_TIMEOUT,
  )
})

describe('the walker itself, on test-only routes', () => {
  const t = appUnderTest({
    extend: (fastify) => {
      const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
      app.post(
        '/test/walker/:id',
        {
          config: { auth: 'admin' },
          schema: {
            params: Type.Object({ id: Type.Integer({ minimum: 1 }) }),
            querystring: Type.Object({
              limit: Type.Integer({ minimum: 1, maximum: 100 }),
              flag: Type.Optional(Type.Boolean()),
            }),
            body: Type.Object({
              title: Type.String({ minLength: 1, maxLength: 50 }),
              tags: Type.Optional(Type.Array(Type.String({ maxLength: 20 }), { maxItems: 5 })),
              meta: Type.Optional(Type.Object({ level: Type.Integer({ minimum: 0, maximum: 9 }) })),
              price: Type.Optional(Type.Number({ minimum: 0, maximum: 1e6 })),
            }),
            response: { 200: Type.Object({ ok: Type.Boolean() }), ...commonErrorResponses },
          },
        },
        async () => ({ ok: true }),
      )
      // Broken on purpose: trusts its path parameter (the router refuses params over 191 characters).
      app.get('/test/walker-broken/:slug', async (request) => {
        const { slug } = request.params as { slug: string }
        if (slug.length > 20) throw new Error('trusted the path')
        return { ok: true }
      })
      // Broken on purpose: ignores its failed validation.
      app.post(
        '/test/walker-lenient',
        { attachValidation: true, schema: { body: Type.Object({ name: Type.String({ maxLength: 9 }) }) } },
        async () => ({ ok: true }),
      )
      // Broken on purpose: reads a multipart form but takes text where its file goes, and any field name.
      app.register(async (scope) => {
        await scope.register(multipart)
        scope.post(
          '/test/walker-upload',
          {
            schema: {
              body: {
                content: {
                  'multipart/form-data': {
                    schema: Type.Object({
                      file: Type.String({ contentMediaType: 'application/octet-stream' }),
                    }),
                  },
                },
              },
            },
            validatorCompiler: () => () => true,
          },
          async (request) => {
            for await (const part of request.parts()) if (part.type === 'file') part.file.resume()
            return { ok: true }
          },
        )
      })
      // Broken on purpose: a 422 without the errors bag.
      app.post(
        '/test/walker-bare-422',
        {
          schema: { body: Type.Object({ name: Type.String() }) },
          errorHandler: (_error, _request, reply) => reply.code(422).send({ message: 'Invalid.' }),
        },
        async () => ({ ok: true }),
      )
    },
  })
  let cases: BadInputCase[]
  beforeAll(async () => {
    const operations = await operationsWithInput(await documentOf(t))
    cases = operations.filter((op) => op.path.startsWith('/test/')).flatMap(badInputCases)
  })

  it('derives body, query and path cases, and a route that validates them passes', async () => {
    const kinds: CaseKind[] = [
      'body',
      'form',
      'missing',
      'multipart',
      'nul',
      'oversized',
      'path',
      'query',
      'wrong-type',
    ]
    expect([...kindsOf(cases, 'POST /test/walker/{id}')].sort()).toEqual(kinds)
    const mine = cases.filter((c) => c.operation === 'POST /test/walker/{id}')
    const labels = (kind: CaseKind) => mine.filter((c) => c.kind === kind && c.invalid).map((c) => c.label)
    expect(labels('wrong-type')).toEqual(
      expect.arrayContaining([
        'title = an object',
        'tags = an object',
        'meta.level = a word',
        'price = a word',
      ]),
    )
    expect(labels('missing')).toEqual(['title left out', 'meta.level left out'])
    expect(labels('oversized')).toEqual(
      expect.arrayContaining([
        'title = 100k characters',
        'tags = 10k items',
        'price = 1e308',
        'price = -1e308',
      ]),
    )
    expect(labels('query')).toEqual(
      expect.arrayContaining(['limit = a word', 'limit left out', 'flag = a word']),
    )
    expect(labels('path')).toEqual(expect.arrayContaining(['id = a word', 'id = a NUL byte', 'id = zero']))
    const result = await walk(t, mine)
    expect(result.violations).toEqual([])
  })

  it('reports a 5xx, a 2xx to invalid input, and a 422 without errors', async () => {
    const result = await walk(
      t,
      cases.filter((c) => c.operation !== 'POST /test/walker/{id}'),
    )
    const find = (text: string) => result.violations.filter((v) => v.includes(text))
    expect(find('GET /test/walker-broken/{slug} [path] slug = 40 digits: 500')).toHaveLength(1)
    expect(find('POST /test/walker-lenient [wrong-type] name = an object: 200')).toHaveLength(1)
    expect(find('POST /test/walker-bare-422 [missing] name left out: 422')).toHaveLength(1)
    expect(find('POST /test/walker-upload [multipart] file = text instead of a file: 200')).toHaveLength(1)
    expect(find('POST /test/walker-upload [multipart] a field named prototype: 200')).toHaveLength(1)
    expect(find('(422 without an errors bag of string arrays)').length).toBeGreaterThan(0)
  })
})
