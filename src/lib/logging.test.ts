import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, TEST_APP_KEY, type TestApp } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { uniqueEmail } from '../../test/helpers/factories.ts'
import { memoryLog } from '../../test/helpers/memory-log.ts'
import { redactUrl } from './logging.ts'

// The production logger settings, writing to memory instead of stdout.
const log = memoryLog()
const { logger } = log
const lines = () => log.lines()

const PASSWORD = 'Pa55word-never-logged'
// A value bound into a failing query, as a reset token or password hash would be.
const QUERY_SECRET = 'bound-value-never-logged'

let t: TestApp
const warnings: Error[] = []
const onWarning = (warning: Error) => warnings.push(warning)
beforeAll(async () => {
  process.on('warning', onWarning)
  t = await buildTestApp({
    loggerInstance: logger,
    extend: (app) => {
      app.get('/test/boom', async () => {
        await app.db.execute(sql`select ${QUERY_SECRET}::text as value from no_such_table`)
      })
    },
  })
})
let closed = false
afterAll(async () => {
  process.off('warning', onWarning)
  if (!closed) await t.close()
})

describe('request logs', () => {
  it('label every request line with its id, honour X-Request-Id, and never write a secret', async () => {
    const startedAt = lines().length
    const client = new TestClient(t.baseUrl)
    const secrets = new Set<string>([
      PASSWORD,
      QUERY_SECRET,
      TEST_APP_KEY,
      TEST_APP_KEY.slice('base64:'.length),
    ])
    const rememberCookies = () => {
      for (const value of client.cookies.values()) {
        secrets.add(value)
        secrets.add(decodeURIComponent(value))
      }
    }
    const ids: string[] = []
    const track = (res: { headers: Headers }) => {
      const id = res.headers.get('x-request-id')
      expect(id).toBeTruthy()
      ids.push(id as string)
    }

    await client.csrf()
    rememberCookies()
    const email = uniqueEmail('logs')
    const registered = await client.post('/api/register', {
      name: 'Log Reader',
      email,
      password: PASSWORD,
      password_confirmation: PASSWORD,
    })
    expect(registered.status, registered.text).toBe(201)
    track(registered)
    rememberCookies()
    const loggedOut = await client.post('/api/logout')
    expect(loggedOut.status).toBe(204)
    rememberCookies()
    const failed = await client.post('/api/login', { email, password: `${PASSWORD}-wrong` })
    expect(failed.status).toBe(422)
    track(failed)
    const loggedIn = await client.post('/api/login', { email, password: PASSWORD })
    expect(loggedIn.status).toBe(200)
    track(loggedIn)
    rememberCookies()

    const withSecrets = await client.get('/api/user?token=abc&signature=def')
    expect(withSecrets.status).toBe(200)
    track(withSecrets)
    const unknownWithSecrets = await client.get('/api/unknown?token=abc&signature=def')
    expect(unknownWithSecrets.status).toBe(404)
    track(unknownWithSecrets)

    const traced = await client.get('/api/user', { headers: { 'x-request-id': 'trace-123' } })
    expect(traced.status).toBe(200)
    expect(traced.headers.get('x-request-id')).toBe('trace-123')
    track(traced)

    const boom = await client.get('/test/boom')
    expect(boom.status).toBe(500)
    expect(boom.data).toEqual({ message: 'Server Error' })
    track(boom)

    // Closing waits for work queued after the answers (mail), so every line is in before we read.
    await t.close()
    closed = true
    const logged = lines().slice(startedAt)
    // The access-log lines, and every warning or error, name the request they belong to.
    const requestLines = logged.filter((line) => line.msg === 'request completed' || Number(line.level) >= 40)
    expect(requestLines.length).toBeGreaterThanOrEqual(9 + 1)
    for (const line of requestLines) {
      expect(line.request_id, JSON.stringify(line)).toEqual(expect.any(String))
    }
    // Each answered request has exactly one access-log line, with what it was and how it ended.
    const answers = [registered, failed, loggedIn, withSecrets, unknownWithSecrets, traced, boom]
    for (const [index, id] of ids.entries()) {
      const access = logged.filter((line) => line.request_id === id && line.msg === 'request completed')
      expect(access, id).toHaveLength(1)
      expect(access[0]).toMatchObject({ method: expect.any(String), status: answers[index]?.status })
      expect(access[0]?.ms).toEqual(expect.any(Number))
      expect(access[0]).not.toHaveProperty('req')
    }
    expect(logged.find((line) => line.request_id === ids[4])).toMatchObject({ user_id: expect.any(Number) })
    expect(ids).toContain('trace-123')
    expect(new Set(ids).size).toBe(ids.length)

    // The 500 is logged with its error (the SQL, not the values bound to it).
    const failure = logged.find((line) => line.request_id === ids.at(-1) && line.msg === 'unhandled error')
    expect(failure, 'the 500 is logged').toBeDefined()
    expect(failure?.err).toMatchObject({
      type: 'DrizzleQueryError',
      query: 'select $1::text as value from no_such_table',
      params: '[REDACTED]',
    })

    // The secret query values are masked in the logged URL, the parameter names kept.
    const urls = logged.flatMap((line) => (typeof line.url === 'string' ? [line.url] : []))
    expect(urls).toContain('/api/user?token=[REDACTED]&signature=[REDACTED]')
    expect(urls).toContain('/api/unknown?token=[REDACTED]&signature=[REDACTED]')

    const text = logged.map((line) => JSON.stringify(line)).join('\n')
    expect(text).not.toMatch(/=abc|=def/)
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThanOrEqual(8)
      expect(text.includes(secret), `a log line contains ${secret}`).toBe(false)
    }
  })

  it('builds the app without Fastify deprecation warnings', () => {
    expect(warnings.map((warning) => `${warning.name}: ${warning.message}`)).toEqual([])
  })
})

describe('redactUrl', () => {
  it('masks secret query values and keeps everything else', () => {
    expect(redactUrl('/reset?email=a%40b.co&token=t0k3n&page=2')).toBe(
      '/reset?email=a%40b.co&token=[REDACTED]&page=2',
    )
    expect(redactUrl('/verify/1/abc?expires=99&Signature=s1g')).toBe(
      '/verify/1/abc?expires=99&Signature=[REDACTED]',
    )
    expect(redactUrl('/x?password=p&code=123456&secret=s')).toBe(
      '/x?password=[REDACTED]&code=[REDACTED]&secret=[REDACTED]',
    )
    expect(redactUrl('/api/user')).toBe('/api/user')
  })
})
