import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { createUser, uniqueEmail } from '../../../test/helpers/factories.ts'
import { SmtpSink } from '../../../test/helpers/smtp-sink.ts'

// Issue 25 item 10: the login limits' gaps (rotating addresses, one IPv6 /64 as millions of addresses).
let t: TestApp
let sink: SmtpSink
beforeAll(async () => {
  sink = await new SmtpSink().start()
  t = await buildTestApp({ env: { MAIL_URL: sink.url, TRUSTED_PROXIES: '127.0.0.1' } })
})
afterAll(async () => {
  await t?.close()
  await sink?.stop()
})

const loginFrom = (from: string, body: { email: string; password: string }) =>
  new TestClient(t.baseUrl).post('/api/login', body, { headers: { 'x-forwarded-for': from } })

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
