import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { grantCredits, signedInClient } from '../../../../test/helpers/factories.ts'
import { createServerDatabase, type ServerDatabase } from '../../../../test/helpers/test-database.ts'
import { openDatabase } from '../../../db/client.ts'
import { auditLedger } from '../ledger-audit.ts'

/**
 * The credits benchmark's load shape, bounded: many clients over a few users doing create ->
 * capture cycles, with releases, repeats, over-commits and same-order races mixed in; then the
 * ledger must pass the very checks the benchmark runs (auditLedger). On PostgreSQL the requests
 * are spread over two app instances sharing one database, so only the database's row lock (not the
 * instance's queue) keeps each user's requests in order; on PGlite, one instance.
 */
const serverUrl = process.env.TEST_DATABASE_URL

const USERS = 6
const CLIENTS = 24
const CYCLES_PER_CLIENT = 12
// Enough for a few dozen holds of 1.5 at once, not for all the ones left held: creates get refused.
const GRANT = 30

interface LoadUser {
  /** Signed in as the user: on the first instance, and (same session) on the second. */
  clients: [TestClient, TestClient]
  captured: number
  capturedAmount: number
  refused: number
}

describe('credit holds under the benchmark load shape', () => {
  let one: TestApp
  let two: TestApp
  let server: ServerDatabase | undefined

  beforeAll(async () => {
    if (serverUrl) {
      server = await createServerDatabase(serverUrl)
      const first = await openDatabase({ url: server.url })
      await first.migrate()
      one = await buildTestApp({ database: first })
      two = await buildTestApp({ database: await openDatabase({ url: server.url }) })
    } else {
      one = await buildTestApp()
      two = one
    }
  })
  afterAll(async () => {
    if (two !== one) await two?.close()
    await one?.close()
    await server?.drop()
  })

  it('create -> capture cycles from many clients over a few users leave the ledger consistent', async () => {
    const users: LoadUser[] = []
    for (let u = 0; u < USERS; u++) {
      const { client, user } = await signedInClient(one)
      await grantCredits(one.database.db, user.id, GRANT)
      await client.csrf()
      const twin = new TestClient(two.baseUrl)
      for (const [name, value] of client.cookies) twin.cookies.set(name, value)
      users.push({ clients: [client, twin], captured: 0, capturedAmount: 0, refused: 0 })
    }
    const unexpected: string[] = []
    const expectStatus = (what: string, res: { status: number; text: string }, allowed: number[]) => {
      if (!allowed.includes(res.status)) unexpected.push(`${what}: ${res.status} ${res.text}`)
    }

    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, worker) => {
        for (let i = 0; i < CYCLES_PER_CLIENT; i++) {
          const loadUser = users[(worker + i) % USERS] as LoadUser
          const client = loadUser.clients[(worker + i) % 2] as TestClient
          const other = loadUser.clients[(worker + i + 1) % 2] as TestClient
          const order = { broker_parent_order_id: `load-${worker}-${i}` }
          const shape = i % 6
          if (shape === 5) {
            // Over-commit: more than any user ever has.
            const res = await client.post('/api/credit-holds', { ...order, credits_amount: GRANT + 1 })
            expectStatus('over-commit', res, [422])
            continue
          }
          // Two clients (two instances on PostgreSQL) create the same order at once: one hold.
          const creates = await Promise.all(
            (shape === 1 ? [client, other] : [client]).map((c) =>
              c.post('/api/credit-holds', { ...order, credits_amount: 1.5 }),
            ),
          )
          for (const res of creates) expectStatus('create', res, [200, 201, 422])
          if (creates.every((res) => res.status === 422)) {
            loadUser.refused++
            continue
          }
          if (creates.filter((res) => res.status === 201).length !== 1) {
            unexpected.push(`create answered ${creates.map((res) => res.status)}: not exactly one 201`)
          }
          if (shape === 4) continue // left held: what makes later creates fall short
          if (shape === 3) {
            const res = await client.post('/api/credit-holds/release', order)
            expectStatus('release', res, [200])
            if (res.data.released !== true) unexpected.push(`release answered ${res.text}`)
            continue
          }
          // A capture, racing a release of the same order when shape is 2: exactly one of them wins.
          const [captured, released] = await Promise.all([
            client.post('/api/credit-holds/capture', order),
            shape === 2 ? other.post('/api/credit-holds/release', order) : undefined,
          ])
          expectStatus('capture', captured, [200])
          if (released) expectStatus('racing release', released, [200])
          const wins = Number(captured.data.captured === true) + Number(released?.data.released === true)
          if (wins !== 1)
            unexpected.push(`capture ${captured.text} / release ${released?.text}: ${wins} winners`)
          if (captured.data.captured === true) {
            loadUser.captured++
            loadUser.capturedAmount += 1.5
            // A repeat capture answers true and debits nothing more.
            const again = await other.post('/api/credit-holds/capture', order)
            if (again.data.captured !== true) unexpected.push(`repeat capture answered ${again.text}`)
          }
        }
      }),
    )

    expect(unexpected).toEqual([])
    const audit = await auditLedger(one.database.db)
    expect(audit.failed).toEqual([])
    const captured = users.reduce((sum, user) => sum + user.captured, 0)
    expect(audit.holdCaptureDebits).toBe(captured)
    // The load did what it is for: captures, and creates refused for want of spendable credits.
    expect(captured).toBeGreaterThan(CLIENTS)
    expect(users.some((user) => user.refused > 0)).toBe(true)
    for (const user of users) {
      const me = await user.clients[0].get('/api/user')
      expect(me.data.available_credits).toBe(GRANT - user.capturedAmount)
      expect(me.data.credits_available_for_automation).toBeGreaterThanOrEqual(0)
      expect(me.data.held_credits).toBeLessThanOrEqual(me.data.available_credits)
    }
  })
})
