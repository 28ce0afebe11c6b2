import { asc, eq, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { grantCredits, signedInClient } from '../../../../test/helpers/factories.ts'
import { createServerDatabase, type ServerDatabase } from '../../../../test/helpers/test-database.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import type { Db } from '../../../db/client.ts'
import { openDatabase } from '../../../db/client.ts'
import { creditAccounts, creditHolds, creditTransactions } from '../../../db/schema/index.ts'
import { toCreditUnits } from '../../../lib/decimal.ts'

/**
 * Races on one user's credits, on PostgreSQL only: PGlite is a single connection that runs one
 * statement at a time, so concurrency there proves nothing. Two app instances, each with its own
 * connection pool, share one fresh database, and the requests are spread over both, as they would
 * be behind a load balancer: only the database's row lock can keep them in order.
 */
const serverUrl = process.env.TEST_DATABASE_URL

// Runs everywhere so the file always has a test; on PGlite it checks the answers of a burst, not
// the locking (PGlite runs one statement at a time whatever we do).
describe('a burst of hold creates on the test database', () => {
  const t = appUnderTest()

  it('60 simultaneous creates on a balance covering 20: 20 held, 40 refused', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 20)
    await client.csrf()
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        client.post('/api/credit-holds', { broker_parent_order_id: `b-${i}` }),
      ),
    )
    expect(answers.filter((r) => r.status === 201)).toHaveLength(20)
    expect(answers.filter((r) => r.status === 422)).toHaveLength(40)
    expect((await client.get('/api/user')).data).toMatchObject({
      available_credits: 20,
      held_credits: 20,
      credits_available_for_automation: 0,
    })
  })
})

describe.each(serverUrl ? [serverUrl] : [])('credit holds under concurrency on PostgreSQL', (url) => {
  let server: ServerDatabase
  let one: TestApp
  let two: TestApp
  let db: Db

  beforeAll(async () => {
    server = await createServerDatabase(url)
    const first = await openDatabase({ url: server.url })
    await first.migrate()
    const second = await openDatabase({ url: server.url })
    one = await buildTestApp({ database: first })
    two = await buildTestApp({ database: second })
    db = first.db
  })
  afterAll(async () => {
    await one?.close()
    await two?.close()
    await server?.drop()
  })

  /** A user with `credits`, and a signed-in client on each instance sharing one session. */
  async function userOnBothInstances(credits: number) {
    const { client, user } = await signedInClient(one)
    await grantCredits(db, user.id, credits)
    await client.csrf()
    const twin = new TestClient(two.baseUrl)
    for (const [name, value] of client.cookies) twin.cookies.set(name, value)
    const clients = [client, twin]
    return { user, clientFor: (i: number) => clients[i % 2] as TestClient }
  }

  /** The ledger and holds of a user agree: chained balances, running totals equal to the sums. */
  async function expectConsistent(userId: number) {
    const rows = await db
      .select()
      .from(creditTransactions)
      .where(eq(creditTransactions.userId, userId))
      .orderBy(asc(creditTransactions.id))
    let balance = 0n
    for (const row of rows) {
      balance += toCreditUnits(row.amount)
      expect(toCreditUnits(row.balanceAfter), `balance_after of ledger row ${row.id}`).toBe(balance)
      expect(balance).toBeGreaterThanOrEqual(0n)
    }
    const [account] = await db.select().from(creditAccounts).where(eq(creditAccounts.userId, userId))
    expect(toCreditUnits(account?.balance ?? '0')).toBe(balance)
    const [held] = await db
      .select({ sum: sql<string>`coalesce(sum(${creditHolds.creditsAmount}), 0)::text` })
      .from(creditHolds)
      .where(sql`${creditHolds.userId} = ${userId} and ${creditHolds.status} = 'held'`)
    expect(toCreditUnits(account?.held ?? '0')).toBe(toCreditUnits(held?.sum ?? '0'))
    expect(toCreditUnits(account?.held ?? '0')).toBeLessThanOrEqual(balance)
    return { rows, balance }
  }

  it('200 concurrent creates on a balance covering 50: exactly 50 held, spendable never negative', async () => {
    const { user, clientFor } = await userOnBothInstances(50)
    const creates = Array.from({ length: 200 }, (_, i) =>
      clientFor(i).post('/api/credit-holds', { broker_parent_order_id: `burst-${i}` }),
    )
    // Readers during the burst must never see more held than the balance.
    const reads = Array.from({ length: 20 }, (_, i) => clientFor(i).get('/api/user'))
    const [created, seen] = await Promise.all([Promise.all(creates), Promise.all(reads)])

    const statuses = created.map((res) => res.status)
    expect(statuses.filter((s) => s === 201)).toHaveLength(50)
    expect(statuses.filter((s) => s === 422)).toHaveLength(150)
    for (const res of created.filter((r) => r.status === 422)) {
      expect(res.data.errors).toEqual({ credits_amount: ['Insufficient credits: 0 spendable.'] })
    }
    for (const res of seen) {
      expect(res.status).toBe(200)
      expect(res.data.credits_available_for_automation).toBeGreaterThanOrEqual(0)
      expect(res.data.held_credits).toBeLessThanOrEqual(50)
    }
    const holds = await db.select().from(creditHolds).where(eq(creditHolds.userId, user.id))
    expect(holds).toHaveLength(50)
    expect(holds.every((h) => h.status === 'held')).toBe(true)
    const after = await clientFor(0).get('/api/user')
    expect(after.data).toMatchObject({
      available_credits: 50,
      held_credits: 50,
      credits_available_for_automation: 0,
    })
    await expectConsistent(user.id)
  })

  it('50 concurrent creates of one order: one 201, 49 answers of that same hold, one credit held', async () => {
    const { user, clientFor } = await userOnBothInstances(10)
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        clientFor(i).post('/api/credit-holds', { broker_parent_order_id: 'same-order', credits_amount: 2 }),
      ),
    )
    expect(answers.filter((r) => r.status === 201)).toHaveLength(1)
    expect(answers.filter((r) => r.status === 200)).toHaveLength(49)
    expect(new Set(answers.map((r) => r.data.id)).size).toBe(1)
    const holds = await db.select().from(creditHolds).where(eq(creditHolds.userId, user.id))
    expect(holds).toHaveLength(1)
    expect((await clientFor(1).get('/api/user')).data).toMatchObject({
      held_credits: 2,
      available_credits: 10,
    })
    await expectConsistent(user.id)
  })

  it('100 concurrent capture/release races on one hold: exactly one winner, at most one debit', async () => {
    const { user, clientFor } = await userOnBothInstances(100)
    const outcomes = new Set<string>()
    for (let round = 0; round < 6; round++) {
      const order = `race-${round}`
      await clientFor(round).post('/api/credit-holds', { broker_parent_order_id: order, credits_amount: 3 })
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          i % 2 === 0
            ? clientFor(i).post('/api/credit-holds/capture', { broker_parent_order_id: order })
            : clientFor(i).post('/api/credit-holds/release', { broker_parent_order_id: order }),
        ),
      )
      expect(answers.every((r) => r.status === 200)).toBe(true)
      const captured = answers.filter((r) => r.data.captured === true).length
      const released = answers.filter((r) => r.data.released === true).length
      // Whichever came first wins, and every later request of the same kind agrees with it.
      expect([captured, released].sort()).toEqual([0, 50])
      const [hold] = await db
        .select()
        .from(creditHolds)
        .where(sql`${creditHolds.userId} = ${user.id} and ${creditHolds.brokerParentOrderId} = ${order}`)
      expect(hold?.status).toBe(captured ? 'captured' : 'released')
      const debits = await db
        .select()
        .from(creditTransactions)
        .where(sql`${creditTransactions.userId} = ${user.id} and ${creditTransactions.reference} = ${order}`)
      expect(debits).toHaveLength(captured ? 1 : 0)
      outcomes.add(hold?.status ?? '')
    }
    const { rows, balance } = await expectConsistent(user.id)
    const captures = rows.filter((r) => r.kind === 'hold_capture').length
    expect(balance).toBe(toCreditUnits(String(100 - 3 * captures)))
    expect((await clientFor(0).get('/api/user')).data).toMatchObject({ held_credits: 0 })
  })

  it('a mixed storm of creates, captures, releases and transfers leaves the ledger consistent', async () => {
    const { user, clientFor } = await userOnBothInstances(40)
    const order = (n: number) => `mix-${n % 30}`
    const requests = Array.from({ length: 300 }, (_, i) => {
      const client = clientFor(i)
      switch (i % 5) {
        case 0:
        case 1:
          return client.post('/api/credit-holds', { broker_parent_order_id: order(i), credits_amount: 1.5 })
        case 2:
          return client.post('/api/credit-holds/capture', { broker_parent_order_id: order(i * 7) })
        case 3:
          return client.post('/api/credit-holds/release', { broker_parent_order_id: order(i * 11) })
        default:
          return client.post('/api/credit-holds/transfer', {
            from_broker_parent_order_id: order(i * 13),
            to_broker_parent_order_id: `moved-${i}`,
          })
      }
    })
    const answers = await Promise.all(requests)
    const unexpected = answers.filter((r) => ![200, 201, 409, 422].includes(r.status))
    expect(unexpected.map((r) => `${r.status} ${r.text}`)).toEqual([])
    const { rows } = await expectConsistent(user.id)
    const holds = await db.select().from(creditHolds).where(eq(creditHolds.userId, user.id))
    // One debit per captured hold, never two.
    expect(rows.filter((r) => r.kind === 'hold_capture')).toHaveLength(
      holds.filter((h) => h.status === 'captured').length,
    )
  })
})
