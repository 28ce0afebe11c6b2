import { describe, expect, it } from 'vitest'
import type { TestApp } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { createUser, uniqueEmail } from '../../test/helpers/factories.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

/**
 * TRUSTED_PROXIES: the test client connects from 127.0.0.1, so trusting 127.0.0.1 makes it a load
 * balancer whose X-Forwarded-For names the client; trusting another address makes it a client whose
 * X-Forwarded-For is a claim anyone can write.
 */

const forwardedFor = (address: string) => ({ headers: { 'x-forwarded-for': address } })

/** Signs in through the "load balancer" for a client at `address`; answers the sessions list's addresses. */
async function sessionAddressesSeen(t: TestApp, address: string): Promise<string[]> {
  const { user, password } = await createUser(t.database.db)
  const client = new TestClient(t.baseUrl)
  await client.request('GET', '/guard/csrf-cookie', undefined, forwardedFor(address))
  const login = await client.post('/api/login', { email: user.email, password }, forwardedFor(address))
  expect(login.status).toBe(200)
  const sessions = await client.get('/api/user-profile/sessions', forwardedFor(address))
  expect(sessions.status).toBe(200)
  return sessions.data.map((s: { ip_address: string }) => s.ip_address)
}

/** Six contact forms, each claiming another client address: how many were throttled. */
async function contactFormsRefused(t: TestApp): Promise<number[]> {
  const guest = new TestClient(t.baseUrl)
  const statuses: number[] = []
  for (let i = 1; i <= 6; i++) {
    const res = await guest.post(
      '/api/contact-form',
      { name: 'Proxy', email: uniqueEmail('proxy'), subject: 'Hi', message: 'Behind a load balancer.' },
      { withoutCsrf: true, ...forwardedFor(`198.51.100.${i}`) },
    )
    statuses.push(res.status)
  }
  return statuses
}

describe('TRUSTED_PROXIES names the load balancer (127.0.0.1)', () => {
  const t = appUnderTest({ env: { TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1' } })

  it('sees the client its X-Forwarded-For names, in the sessions list', async () => {
    expect(await sessionAddressesSeen(t, '203.0.113.7')).toEqual(['203.0.113.7'])
  })

  it('takes the nearest untrusted address of a chain: what the client wrote in front is not believed', async () => {
    // The client claimed 192.0.2.1; the load balancer appended the address it saw (203.0.113.9).
    expect(await sessionAddressesSeen(t, '192.0.2.1, 203.0.113.9')).toEqual(['203.0.113.9'])
  })

  it('throttles each client apart: six clients behind it are not one address', async () => {
    t.clock.advance(61_000)
    expect(await contactFormsRefused(t)).toEqual([200, 200, 200, 200, 200, 200])
  })
})

describe('TRUSTED_PROXIES that does not name the peer', () => {
  const t = appUnderTest({ env: { TRUSTED_PROXIES: '10.1.2.3' } })

  it('ignores the X-Forwarded-For it sends: the peer address is the client', async () => {
    expect(await sessionAddressesSeen(t, '203.0.113.7')).toEqual(['127.0.0.1'])
  })

  it('throttles by the peer address, however the client varies X-Forwarded-For', async () => {
    t.clock.advance(61_000)
    expect(await contactFormsRefused(t)).toEqual([200, 200, 200, 200, 200, 429])
  })
})

describe('TRUSTED_PROXIES unset (the default)', () => {
  const t = appUnderTest()

  it('believes no X-Forwarded-For', async () => {
    expect(await sessionAddressesSeen(t, '203.0.113.7')).toEqual(['127.0.0.1'])
  })
})
