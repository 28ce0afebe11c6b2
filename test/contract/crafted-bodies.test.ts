import { beforeEach, describe, expect, it } from 'vitest'
import { TestClient } from '../helpers/client.ts'
import { createUser } from '../helpers/factories.ts'
import { appUnderTest } from '../helpers/under-test.ts'

/**
 * Throttle keys are built before validation, from the body as sent: a value that is not a string
 * (an object whose `toString` is no function cannot even be turned into one) is the 422 validation
 * gives it, never a 500 where the key is built.
 */

const t = appUnderTest()
// Each test starts with fresh throttle windows.
beforeEach(() => t.clock.advance(3_600_000))

const crafted: [string, unknown][] = [
  ['an object with toString', { toString: 1 }],
  ['an object with toString and valueOf', { toString: {}, valueOf: {} }],
  ['an array of such objects', [{ toString: 1 }]],
  ['an array of two strings', ['a@example.com', 'b@example.com']],
  ['an empty object', {}],
]

const mustBeString = { email: ['The email field must be a string.'] }

describe.each([
  ['POST /api/login', '/api/login', { password: 'whatever it is' }],
  ['POST /api/password/email', '/api/password/email', {}],
])('%s', (_name, path, rest) => {
  it.each(crafted)('answers 422 to an email that is %s', async (_label, email) => {
    const res = await new TestClient(t.baseUrl).post(path, { ...rest, email })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual(mustBeString)
  })

  it('still counts crafted attempts against the throttle, as attempts without an email', async () => {
    const client = new TestClient(t.baseUrl)
    const statuses: number[] = []
    for (let i = 0; i < 8; i++)
      statuses.push((await client.post(path, { ...rest, email: { toString: i } })).status)
    expect(statuses).toContain(429)
    expect(statuses.filter((status) => status !== 422 && status !== 429)).toEqual([])
  })
})

it('keys a one-item array as the address it is coerced to, so it cannot skip the address its throttle counts', async () => {
  const { user } = await createUser(t.database.db)
  const client = new TestClient(t.baseUrl)
  const statuses: number[] = []
  for (let i = 0; i < 6; i++) {
    const email = i % 2 === 0 ? user.email : [user.email]
    statuses.push((await client.post('/api/login', { email, password: 'wrong password' })).status)
  }
  expect(statuses).toEqual([422, 422, 422, 422, 422, 429])
})
