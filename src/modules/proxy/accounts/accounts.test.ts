import { beforeEach, describe, expect, it } from 'vitest'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { upstreamEnv } from '../../../../test/helpers/proxy.ts'
import { appUnderTest, fakeUpstreamUnderTest } from '../../../../test/helpers/under-test.ts'

const fake = fakeUpstreamUnderTest()
const t = appUnderTest(() => ({ env: upstreamEnv(fake.url) }))
beforeEach(() => {
  fake.reset()
  fake.on('GET', /^\/accounts/, (call) => ({
    body: { data: { path: call.path, user: call.headers['x-user-id'] } },
  }))
})

describe('broker accounts', () => {
  it.each([
    ['/api/accounts', '/accounts'],
    ['/api/accounts/balances', '/accounts/balances'],
    ['/api/accounts/acc-1/balance', '/accounts/acc-1/balance'],
    ['/api/accounts/acc-1/growth', '/accounts/acc-1/growth'],
    ['/api/accounts/A%2FB/pnl', '/accounts/A%2FB/pnl'],
  ])('GET %s reads %s for the user, cached for that user only', async (path, upstreamPath) => {
    const a = await signedInClient(t)
    const b = await signedInClient(t)
    const mine = await a.client.get(path)
    expect(mine.status).toBe(200)
    expect(mine.data).toEqual({ path: upstreamPath, user: String(a.user.id) })
    expect((await a.client.get(path)).headers.get('x-cache')).toBe('HIT')
    const theirs = await b.client.get(path)
    expect(theirs.data).toEqual({ path: upstreamPath, user: String(b.user.id) })
    expect(theirs.headers.get('x-cache')).toBe('MISS')
    expect(fake.calls.map((c) => c.path)).toEqual([upstreamPath, upstreamPath])
  })

  it('need a session', async () => {
    const res = await fetch(`${t.baseUrl}/api/accounts/balances`, { headers: { accept: 'application/json' } })
    expect(res.status).toBe(401)
    expect(fake.calls).toHaveLength(0)
  })
})
