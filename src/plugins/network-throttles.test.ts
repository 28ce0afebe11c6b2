import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { type ClientResponse, TestClient } from '../../test/helpers/client.ts'
import { uniqueEmail } from '../../test/helpers/factories.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

/**
 * Per-address throttles count an IPv6 client by its /64 and, at 16 times the limit, by its /48: a
 * site holding a /48 cannot rotate its 65,536 /64s for as many allowances. The app trusts 127.0.0.1
 * as its load balancer, so X-Forwarded-For plays each client; every test takes a /48 of its own.
 */

const tag = () => randomBytes(4).toString('hex')
const stores = ['memory', ...(process.env.TEST_REDIS_URL ? ['redis'] : [])]

let lastNetwork = 0
/** A /48 no other test uses: `2001:db8:N`. */
const newNetwork = () => `2001:db8:${(++lastNetwork).toString(16)}`
/** An address in the `n`th /64 of `network`, its interface id picked at will (as a client can). */
const inSubnet = (network: string, n: number) =>
  `${network}:${n.toString(16)}:${randomBytes(2).toString('hex')}::${randomBytes(2).toString('hex')}`
const from = (address: string) => ({ headers: { 'x-forwarded-for': address }, withoutCsrf: true })

const CONTACT_LIMIT = 5
const NETWORK_CONTACT_LIMIT = 16 * CONTACT_LIMIT

/** A contact form from `address`: an empty one (422, counted all the same) unless `valid`. */
const contact = (url: string, address: string, valid = false) =>
  new TestClient(url).post(
    '/api/contact-form',
    valid
      ? { name: 'Visitor', email: uniqueEmail('net'), subject: 'Hello', message: 'From a big network.' }
      : {},
    from(address),
  )

function expectThrottled(res: ClientResponse, limit: number) {
  expect(res.status).toBe(429)
  expect(res.data).toEqual({ message: 'Too Many Attempts.' })
  const retryAfter = Number(res.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThan(0)
  expect(retryAfter).toBeLessThanOrEqual(60)
  expect(res.headers.get('x-ratelimit-limit')).toBe(String(limit))
}

const limitSaid = (res: ClientResponse) => [
  res.headers.get('x-ratelimit-limit'),
  res.headers.get('x-ratelimit-remaining'),
]

describe.each(stores)('per-address throttles and the IPv6 /48 (%s store)', (store) => {
  const prefix = `test:${tag()}:`
  const t = appUnderTest(() => ({
    env: { TRUSTED_PROXIES: '127.0.0.1' },
    redis: store === 'redis' ? new Redis(process.env.TEST_REDIS_URL ?? '', { keyPrefix: prefix }) : null,
  }))
  afterAll(async () => {
    if (store !== 'redis') return
    // The app quit its connection; clear what the run left under its prefix.
    const cleaner = new Redis(process.env.TEST_REDIS_URL ?? '')
    const keys = await cleaner.keys(`${prefix}*`)
    if (keys.length > 0) await cleaner.del(...keys)
    await cleaner.quit()
  })

  it('refuses a client rotating the /64s of one /48 once the /48 has had 16 times the limit', async () => {
    const network = newNetwork()
    // Two forms from each of 40 /64s: within every /64's 5, 80 in all.
    const answers: ClientResponse[] = []
    for (let subnet = 0; subnet < NETWORK_CONTACT_LIMIT / 2; subnet++) {
      for (let i = 0; i < 2; i++) answers.push(await contact(t.baseUrl, inSubnet(network, subnet)))
    }
    expect(answers.map((res) => res.status).filter((status) => status !== 422)).toEqual([])
    // The headers say the tighter limit: the /64's at first, the /48's at its end.
    expect(limitSaid(answers[0] as ClientResponse)).toEqual(['5', '4'])
    expect(limitSaid(answers.at(-1) as ClientResponse)).toEqual(['80', '0'])

    // A /64 of the same /48 not used yet is refused, a valid form too.
    expectThrottled(await contact(t.baseUrl, inSubnet(network, 0xffff), true), NETWORK_CONTACT_LIMIT)
    expectThrottled(await contact(t.baseUrl, inSubnet(network, 0x1234)), NETWORK_CONTACT_LIMIT)
    // Another /48, even of the same /32, is counted apart.
    expect((await contact(t.baseUrl, inSubnet(newNetwork(), 0), true)).status).toBe(200)

    // The window passes for the /48 as for its /64s.
    if (store === 'memory') {
      t.clock.advance(61_000)
      expect((await contact(t.baseUrl, inSubnet(network, 0xffff), true)).status).toBe(200)
    }
  })

  it('counts toward the /48 only what its /64 let through: one busy /64 cannot shut out its neighbours', async () => {
    const network = newNetwork()
    const busy = await Promise.all(Array.from({ length: 30 }, () => contact(t.baseUrl, inSubnet(network, 1))))
    expect(busy.filter((res) => res.status === 422)).toHaveLength(CONTACT_LIMIT)
    expect(busy.filter((res) => res.status === 429)).toHaveLength(30 - CONTACT_LIMIT)
    // The /48 has 75 left for the other /64s, and no more.
    for (let subnet = 2; subnet < 2 + 75 / 5; subnet++) {
      for (let i = 0; i < CONTACT_LIMIT; i++)
        expect((await contact(t.baseUrl, inSubnet(network, subnet))).status).toBe(422)
    }
    expectThrottled(await contact(t.baseUrl, inSubnet(network, 0xfff0)), NETWORK_CONTACT_LIMIT)
  })

  it('keys the login limit by email and /48: 80 attempts for one email across the /64s, other emails unaffected', async () => {
    const network = newNetwork()
    const email = uniqueEmail('net-login')
    // Without a password: refused by validation (422) before any password or back-off, but counted.
    const login = (address: string, who = email) =>
      new TestClient(t.baseUrl).post(
        '/api/login',
        { email: who },
        { headers: { 'x-forwarded-for': address } },
      )
    for (let subnet = 0; subnet < 16; subnet++) {
      for (let i = 0; i < 5; i++) expect((await login(inSubnet(network, subnet))).status).toBe(422)
    }
    const fresh = inSubnet(network, 0xabc)
    expect((await login(fresh)).status).toBe(429)
    expect((await login(fresh, uniqueEmail('net-other'))).status).toBe(422)
    expect((await login(inSubnet(newNetwork(), 0))).status).toBe(422)
  })

  it('leaves IPv4 as it was: each address counted alone, however many share a /24, mapped or not', async () => {
    const block = `198.18.${lastNetwork % 256}`
    lastNetwork += 1
    // 100 addresses of one /24, three forms each: nothing groups them.
    for (let host = 1; host <= 100; host++) {
      for (let i = 0; i < 3; i++) expect((await contact(t.baseUrl, `${block}.${host}`)).status).toBe(422)
    }
    // One address still has its own 5: two more, one of them written IPv4-mapped, then 429.
    expect(limitSaid(await contact(t.baseUrl, `${block}.7`))).toEqual(['5', '1'])
    expect((await contact(t.baseUrl, `::ffff:${block}.7`)).status).toBe(422)
    expectThrottled(await contact(t.baseUrl, `${block}.7`, true), CONTACT_LIMIT)
  })
})
