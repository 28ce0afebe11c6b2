import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { buildTestApp } from '../../../test/helpers/build-test-app.ts'
import { type ClientResponse, TestClient } from '../../../test/helpers/client.ts'
import { createUser, uniqueEmail } from '../../../test/helpers/factories.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'

// Issue 25 item 10: the login limits' gaps (rotating addresses, one IPv6 /64 as millions of addresses).
const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url, TRUSTED_PROXIES: '127.0.0.1' } }))

const loginFrom = (from: string, body: { email: string; password: string }, app = t) =>
  new TestClient(app.baseUrl).post('/api/login', body, { headers: { 'x-forwarded-for': from } })

// A new address for every attempt: what an attacker rotating addresses does, past every per-address limit.
let addresses = 0
const nextAddress = () => {
  addresses += 1
  return `10.${addresses >> 8}.${addresses & 255}.1`
}
async function failLogins(email: string, count: number, apps = [t]) {
  for (let i = 0; i < count; i++) {
    const app = apps[i % apps.length] ?? t
    expect((await loginFrom(nextAddress(), { email, password: 'wrong-password' }, app)).status).toBe(422)
  }
}

/** Fortify's lockout answer: 429, the message on `email`, and Retry-After saying the same seconds. */
function expectPaused(res: ClientResponse, atMostSeconds: number) {
  expect(res.status).toBe(429)
  const seconds = Number(res.headers.get('retry-after'))
  expect(seconds).toBeGreaterThan(atMostSeconds - 5)
  expect(seconds).toBeLessThanOrEqual(atMostSeconds)
  const message = `Too many login attempts. Please try again in ${seconds} seconds.`
  expect(res.data).toEqual({ message, errors: { email: [message] } })
}

describe('POST /api/login: per-address limits count an IPv6 /64 as one address', () => {
  it('throttles 5 attempts a minute per email across the addresses of one /64, not another /64', async () => {
    const { user, password } = await createUser(t.database.db)
    const wrong = { email: user.email, password: 'wrong-password' }
    for (let i = 1; i <= 5; i++) expect((await loginFrom(`2001:db8:a:1::${i}`, wrong)).status).toBe(422)
    const sameNetwork = await loginFrom('2001:db8:a:1:ffff:1234:5678:9abc', { email: user.email, password })
    expect(sameNetwork.status).toBe(429)
    expect((await loginFrom('2001:db8:a:2::1', { email: user.email, password })).status).toBe(200)
  })

  it('counts 50 failed logins per 10 minutes across emails per /64', async () => {
    for (let i = 1; i <= 50; i++) {
      const res = await loginFrom(`2001:db8:b:1::${i.toString(16)}`, { email: uniqueEmail(), password: 'x' })
      expect(res.status).toBe(422)
    }
    const { user, password } = await createUser(t.database.db)
    expect((await loginFrom('2001:db8:b:1::abcd', { email: user.email, password })).status).toBe(429)
    expect((await loginFrom('2001:db8:b:2::1', { email: user.email, password })).status).toBe(200)
  })

  it('counts an IPv4-mapped IPv6 address as the IPv4 address', async () => {
    const { user, password } = await createUser(t.database.db)
    const wrong = { email: user.email, password: 'wrong-password' }
    for (let i = 1; i <= 3; i++) expect((await loginFrom('198.51.100.7', wrong)).status).toBe(422)
    for (let i = 1; i <= 2; i++) expect((await loginFrom('::ffff:198.51.100.7', wrong)).status).toBe(422)
    expect((await loginFrom('::ffff:c633:6407', { email: user.email, password })).status).toBe(429)
  })
})

describe('POST /api/login: the per-account back-off', () => {
  it('pauses an account after 10 failures from rotating addresses, 1 minute then 5, mailing its owner; then the password works', async () => {
    const { user, password } = await createUser(t.database.db)
    await failLogins(user.email, 10)
    // Even the right password waits: a guess during the pause tells nothing.
    expectPaused(await loginFrom(nextAddress(), { email: user.email, password }), 60)
    const first = await sink.waitForMailTo(user.email, 0)
    expect(first.subject).toBe('Failed sign-in attempts')
    expect(first.text).toContain('a wrong password 10 times')
    expect(first.text).toContain('paused for 1 minute;')

    t.clock.advance(61_000)
    await failLogins(user.email.toUpperCase(), 10)
    expectPaused(await loginFrom(nextAddress(), { email: user.email, password }), 300)
    const second = await sink.waitForMailTo(user.email, 1)
    expect(second.text).toContain('a wrong password 20 times')
    expect(second.text).toContain('paused for 5 minutes;')

    // Once the pause ends the owner signs in, and the count starts again (1 minute, not 15).
    t.clock.advance(301_000)
    expect((await loginFrom(nextAddress(), { email: user.email, password })).status).toBe(200)
    await failLogins(user.email, 10)
    expectPaused(await loginFrom(nextAddress(), { email: user.email, password }), 60)
    expect((await sink.waitForMailTo(user.email, 2)).text).toContain('paused for 1 minute;')
  })

  it('caps the pause at 15 minutes, and mails no more once there', async () => {
    const { user, password } = await createUser(t.database.db)
    for (const [pause, mails] of [
      [60, 1],
      [300, 2],
      [900, 3],
      [900, 3],
    ] as const) {
      await failLogins(user.email, 10)
      expectPaused(await loginFrom(nextAddress(), { email: user.email, password }), pause)
      if (mails === 3) await sink.waitForMailTo(user.email, 2)
      t.clock.advance((pause + 1) * 1000)
    }
    expect(sink.to(user.email).at(-1)?.text).toContain('paused for 15 minutes;')
    await sleep(500)
    expect(sink.to(user.email)).toHaveLength(3)
    expect((await loginFrom(nextAddress(), { email: user.email, password })).status).toBe(200)
  })

  it('answers an email without an account the same, and mails no one', async () => {
    const email = uniqueEmail()
    await failLogins(email, 10)
    expectPaused(await loginFrom(nextAddress(), { email, password: 'any-password' }), 60)
    expect(sink.to(email)).toHaveLength(0)
  })
})

const redisUrl = process.env.TEST_REDIS_URL
describe.each(redisUrl ? ['redis'] : [])('the per-account back-off across instances (%s)', () => {
  it('counts the failures of every instance together', async () => {
    const shared = `test:${randomBytes(4).toString('hex')}:`
    const env = { TRUSTED_PROXIES: '127.0.0.1' }
    const a = await buildTestApp({ env, redis: new Redis(redisUrl ?? '', { keyPrefix: shared }) })
    const b = await buildTestApp({
      env,
      redis: new Redis(redisUrl ?? '', { keyPrefix: shared }),
      database: a.database,
    })
    try {
      const { user, password } = await createUser(a.database.db)
      await failLogins(user.email, 10, [a, b])
      expectPaused(await loginFrom(nextAddress(), { email: user.email, password }, a), 60)
      expectPaused(await loginFrom(nextAddress(), { email: user.email, password }, b), 60)
    } finally {
      await b.app.close().catch(() => {})
      await a.close()
    }
  })
})
