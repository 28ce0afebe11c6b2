import { describe, expect, it } from 'vitest'
import { TestClient } from '../../test/helpers/client.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

const t = appUnderTest({
  extend: (app) => {
    app.get('/test/boom', async () => {
      throw new Error('secret internals: password=hunter2')
    })
  },
})

async function guest() {
  const client = new TestClient(t.baseUrl)
  await client.csrf()
  return client
}

describe('error shapes', () => {
  it('404 names the route, as Laravel does', async () => {
    const res = await new TestClient(t.baseUrl).get('/api/no-such-thing?x=1')
    expect(res.status).toBe(404)
    expect(res.data).toEqual({ message: 'The route api/no-such-thing could not be found.' })
  })

  it('405 lists the supported methods in the body and the Allow header', async () => {
    const res = await (await guest()).delete('/api/login')
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('POST')
    expect(res.data).toEqual({
      message: 'The DELETE method is not supported for route api/login. Supported methods: POST.',
    })
  })

  it('500 is {"message":"Server Error"} with no stack or internals', async () => {
    const res = await new TestClient(t.baseUrl).get('/test/boom')
    expect(res.status).toBe(500)
    expect(res.data).toEqual({ message: 'Server Error' })
    expect(res.text).not.toContain('hunter2')
  })

  it('malformed JSON is a 400 with a message, not a 500', async () => {
    const res = await (await guest()).post('/api/login', undefined, {
      raw: '{"email": "a@b.co", ',
      headers: { 'content-type': 'application/json' },
    })
    expect(res.status).toBe(400)
    expect(res.data).toEqual({ message: 'The request body is not valid JSON.' })
  })

  it('an unsupported content type is a 415', async () => {
    const res = await (await guest()).post('/api/login', undefined, {
      raw: '<login/>',
      headers: { 'content-type': 'application/xml' },
    })
    expect(res.status).toBe(415)
    expect(res.data).toEqual({ message: 'Unsupported Media Type.' })
  })

  it('a body over 1 MiB is a 413', async () => {
    const res = await (await guest()).post('/api/register', { name: 'x'.repeat(1024 * 1024 + 10) })
    expect(res.status).toBe(413)
    expect(res.data).toEqual({ message: 'The request body is too large.' })
  })

  it('a JSON body that is not an object is a 422 on "body"', async () => {
    const res = await (await guest()).post('/api/login', ['a', 'b'])
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The body field must be an object.',
      errors: { body: ['The body field must be an object.'] },
    })
  })

  it('an empty JSON body reads as {} and reports the required fields', async () => {
    const res = await (await guest()).post('/api/login', undefined, {
      raw: '',
      headers: { 'content-type': 'application/json' },
    })
    expect(res.status).toBe(422)
    expect(Object.keys(res.data.errors)).toEqual(['email', 'password'])
  })

  it('echoes a sane X-Request-Id and replaces an unsafe one', async () => {
    const kept = await fetch(`${t.baseUrl}/up`, { headers: { 'x-request-id': 'trace-abc.123' } })
    expect(kept.headers.get('x-request-id')).toBe('trace-abc.123')
    const replaced = await fetch(`${t.baseUrl}/up`, { headers: { 'x-request-id': 'bad id <script>' } })
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })
})

describe('URLs the router refuses', () => {
  it('answers an undecodable URL with a 400 {message}', async () => {
    const res = await new TestClient(t.baseUrl).get('/api/knowledge-base/%FF')
    expect(res.status).toBe(400)
    expect(res.data).toEqual({ message: 'The request URL is malformed.' })
  })

  it('answers a path parameter past the router limit with the usual 404 {message}', async () => {
    const long = 'x'.repeat(5000)
    const res = await new TestClient(t.baseUrl).get(`/api/knowledge-base/${long}`)
    expect(res.status).toBe(404)
    expect(res.data.message).toMatch(/^The route api\/knowledge-base\/x+\.\.\. could not be found\.$/)
  })

  it('answers an unknown path holding a NUL byte with a JSON 404', async () => {
    const res = await new TestClient(t.baseUrl).get('/api/no%00where')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(res.data).toEqual({ message: 'The route api/no%00where could not be found.' })
  })
})
