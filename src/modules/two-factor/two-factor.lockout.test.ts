import { eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { describe, expect, it } from 'vitest'
import { TEST_APP_KEY } from '../../../test/helpers/build-test-app.ts'
import { type ClientResponse, TestClient } from '../../../test/helpers/client.ts'
import { createUser } from '../../../test/helpers/factories.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { users } from '../../db/schema/index.ts'
import { encryptSecret } from '../../lib/encryption.ts'

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))

const LOCKED_SUBJECT = 'Two-factor sign-in locked'

/** A user whose 2FA is on, with the secret their authenticator app holds. */
async function userWithTwoFactor() {
  const { user, password } = await createUser(t.database.db, { verified: true })
  const secret = new Secret({ size: 20 }).base32
  await t.database.db
    .update(users)
    .set({ twoFactorSecret: encryptSecret(secret, TEST_APP_KEY), twoFactorConfirmedAt: new Date() })
    .where(eq(users.id, user.id))
  return { user, password, secret }
}

describe('POST /api/two-factor-challenge: the escalating lockout', () => {
  it('locks the account for 1 minute after 5 wrong codes, 5 minutes after 10, mailing its owner each time', async () => {
    const { user, password, secret } = await userWithTwoFactor()
    const code = () => TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: t.clock.nowMs() })
    const wrongCode = () => String((Number(code()) + 1) % 1_000_000).padStart(6, '0')
    const pendingLogin = async () => {
      const client = new TestClient(t.baseUrl)
      const res = await client.post('/api/login', { email: user.email, password })
      expect(res.data).toEqual({ two_factor: true })
      return client
    }
    const challenge = (client: TestClient, body: Record<string, string>) =>
      client.post('/api/two-factor-challenge', body)
    const expectLocked = (res: ClientResponse, atMostSeconds: number) => {
      expect(res.status).toBe(429)
      expect(res.data).toEqual({ message: 'Too Many Attempts.' })
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(atMostSeconds)
    }

    // Five wrong codes (the per-minute throttle's worth): a first, short lockout, and a mail.
    let client = await pendingLogin()
    for (let i = 0; i < 5; i++) expect((await challenge(client, { code: wrongCode() })).status).toBe(401)
    const first = await sink.waitForMailTo(user.email, 0)
    expect(first.subject).toBe(LOCKED_SUBJECT)
    expect(first.text).toContain('a wrong two-factor code 5 times')
    expect(first.text).toContain('locked for 1 minute.')
    expect(first.text).toContain('change it now')

    // A minute later, five more wrong ones (recovery codes count too): locked for 5 minutes.
    t.clock.advance(61_000)
    for (let i = 0; i < 4; i++) expect((await challenge(client, { code: wrongCode() })).status).toBe(401)
    expect((await challenge(client, { recovery_code: 'AAAAAAAAAA-BBBBBBBBBB' })).status).toBe(401)
    const second = await sink.waitForMailTo(user.email, 1)
    expect(second.text).toContain('a wrong two-factor code 10 times')
    expect(second.text).toContain('locked for 5 minutes.')

    // Past the per-minute throttle, the lockout still holds: even the right code is refused.
    t.clock.advance(61_000)
    expectLocked(await challenge(client, { code: code() }), 240)
    expect((await client.get('/api/user')).status).toBe(401)
    // A fresh password does not help either.
    client = await pendingLogin()
    expectLocked(await challenge(client, { code: code() }), 240)

    // Once it ends, the right code signs in, and the count starts again: 5 more wrong codes are
    // a first lockout again (1 minute), not a third (15 minutes).
    t.clock.advance(240_000)
    client = await pendingLogin()
    expect((await challenge(client, { code: code() })).status).toBe(200)
    expect((await client.get('/api/user')).data.id).toBe(user.id)
    t.clock.advance(61_000)
    client = await pendingLogin()
    for (let i = 0; i < 5; i++) expect((await challenge(client, { code: wrongCode() })).status).toBe(401)
    expect((await sink.waitForMailTo(user.email, 2)).text).toContain('locked for 1 minute.')
    t.clock.advance(61_000)
    expect((await challenge(client, { code: code() })).status).toBe(200)
  })
})
