import { randomBytes } from 'node:crypto'
import { and, asc, eq, sql } from 'drizzle-orm'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { buildTestApp, type TestApp } from '../../../../test/helpers/build-test-app.ts'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { connected, echoFor, eventually, settle } from '../../../../test/helpers/echo.ts'
import { grantCredits, signedInClient } from '../../../../test/helpers/factories.ts'
import { memoryLog } from '../../../../test/helpers/memory-log.ts'
import { parseSamples, sampleValue } from '../../../../test/helpers/prometheus.ts'
import { type Frame, PusherSocket } from '../../../../test/helpers/pusher-socket.ts'
import { sharedDatabase } from '../../../../test/helpers/test-database.ts'
import { withTwoInstances } from '../../../../test/helpers/two-instances.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import type { Db } from '../../../db/client.ts'
import { creditAccounts, creditHolds, creditTransactions } from '../../../db/schema/index.ts'
import { EXPIRY_SWEEP_LOCK } from './holds.repository.ts'

// Holds expire: a hold left `held` for HOLD_TTL_HOURS is released by the sweep, as a release with its
// ledger effect and its notification. An hour here, so that moving the clock past it leaves the
// sessions alive (SESSION_LIFETIME: 120 minutes).
const HOUR = 3_600_000
const METRICS_TOKEN = `metrics-${randomBytes(16).toString('hex')}`
const env = { HOLD_TTL_HOURS: '1', METRICS_TOKEN }

const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`

async function summaryOf(client: TestClient) {
  const { data } = await client.get('/api/user')
  return {
    available: data.available_credits,
    held: data.held_credits,
    automation: data.credits_available_for_automation,
  }
}

const ledgerRows = (db: Db, userId: number) =>
  db
    .select()
    .from(creditTransactions)
    .where(eq(creditTransactions.userId, userId))
    .orderBy(asc(creditTransactions.id))

async function holdOf(db: Db, userId: number, orderId: string) {
  const [row] = await db
    .select()
    .from(creditHolds)
    .where(and(eq(creditHolds.userId, userId), eq(creditHolds.brokerParentOrderId, orderId)))
  return row
}

async function placeHold(client: TestClient, orderId: string, credits: number) {
  const res = await client.post('/api/credit-holds', {
    broker_parent_order_id: orderId,
    credits_amount: credits,
  })
  expect(res.status, res.text).toBe(201)
  return res.data
}

/** How much a sample of this app's /metrics moves between now and the reader's call. */
async function metricsBaseline(app: TestApp) {
  const samples = async () => {
    const res = await fetch(`${app.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    })
    expect(res.status).toBe(200)
    return parseSamples(await res.text())
  }
  const before = await samples()
  return async () => {
    const after = await samples()
    return (name: string, labels: Record<string, string> = {}) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels)
  }
}

describe('the hold expiry sweep (HOLD_TTL_HOURS)', () => {
  const t = appUnderTest({ env })
  const echoes: { disconnect(): void }[] = []
  afterAll(() => {
    for (const echo of echoes) echo.disconnect()
  })
  const sweep = () => t.app.services.holds.expireHeld()

  it('releases a hold held past the TTL: credits free again, no debit, a notification, capture then answers false', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 10)
    const notifications: { type: string; status: string; broker_parent_order_id: string }[] = []
    const echo = echoFor(t, client)
    echoes.push(echo)
    await connected(echo)
    echo.private(`App.Models.User.${user.id}`).notification((n: (typeof notifications)[number]) => {
      notifications.push(n)
    })
    await settle()

    const [old, young] = [unique('PO-old'), unique('PO-young')]
    await placeHold(client, old, 3)
    t.clock.advance(HOUR - 1000)
    await placeHold(client, young, 2)
    const ledgerBefore = await ledgerRows(t.database.db, user.id)
    expect(await summaryOf(client)).toEqual({ available: 10, held: 5, automation: 5 })

    // One second short of the TTL: nothing yet.
    await sweep()
    expect((await holdOf(t.database.db, user.id, old))?.status).toBe('held')

    t.clock.advance(1000)
    const moved = await metricsBaseline(t)
    expect(await sweep()).toBeGreaterThanOrEqual(1)

    expect(await summaryOf(client)).toEqual({ available: 10, held: 2, automation: 8 })
    expect(await ledgerRows(t.database.db, user.id)).toEqual(ledgerBefore)
    const released = await holdOf(t.database.db, user.id, old)
    expect(released).toMatchObject({ status: 'released', releasedAt: t.clock.now(), capturedAt: null })
    expect((await holdOf(t.database.db, user.id, young))?.status).toBe('held')

    const notified = await eventually(() =>
      notifications.find((n) => n.broker_parent_order_id === old && n.status === 'released'),
    )
    expect(notified).toMatchObject({ type: 'order-status-updated' })
    const delta = await moved()
    expect(
      delta('trading_api_credit_hold_transitions_total', { transition: 'released' }),
    ).toBeGreaterThanOrEqual(1)
    expect(delta('trading_api_credit_hold_expirations_total')).toBe(
      delta('trading_api_credit_hold_transitions_total', { transition: 'released' }),
    )

    const capture = await client.post('/api/credit-holds/capture', { broker_parent_order_id: old })
    expect(capture).toMatchObject({ status: 200, data: { captured: false } })
    expect(await summaryOf(client)).toEqual({ available: 10, held: 2, automation: 8 })
    expect(await ledgerRows(t.database.db, user.id)).toEqual(ledgerBefore)

    // The sweep again finds nothing of this user's to do: one notification for the hold, no more.
    await sweep()
    await settle()
    const statusesOf = (order: string) =>
      notifications.filter((n) => n.broker_parent_order_id === order).map((n) => n.status)
    expect(statusesOf(old)).toEqual(['held', 'released'])
    expect(statusesOf(young)).toEqual(['held'])
  })

  it('leaves captured and released holds as they are', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 10)
    const [captured, released] = [unique('PO-captured'), unique('PO-released')]
    await placeHold(client, captured, 4)
    await placeHold(client, released, 1)
    expect(
      (await client.post('/api/credit-holds/capture', { broker_parent_order_id: captured })).data,
    ).toEqual({
      captured: true,
    })
    expect(
      (await client.post('/api/credit-holds/release', { broker_parent_order_id: released })).data,
    ).toEqual({
      released: true,
    })
    const holdsBefore = [
      await holdOf(t.database.db, user.id, captured),
      await holdOf(t.database.db, user.id, released),
    ]
    const ledgerBefore = await ledgerRows(t.database.db, user.id)

    t.clock.advance(2 * HOUR)
    await sweep()

    expect([
      await holdOf(t.database.db, user.id, captured),
      await holdOf(t.database.db, user.id, released),
    ]).toEqual(holdsBefore)
    expect(await ledgerRows(t.database.db, user.id)).toEqual(ledgerBefore)
    expect(await summaryOf(client)).toEqual({ available: 6, held: 0, automation: 6 })
  })

  it('counts a hold moved to another order from its creation, and releases it on the order it is on', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 5)
    const [from, to] = [unique('PO-from'), unique('PO-to')]
    await placeHold(client, from, 2)
    t.clock.advance(HOUR / 2)
    const transfer = { from_broker_parent_order_id: from, to_broker_parent_order_id: to }
    expect((await client.post('/api/credit-holds/transfer', transfer)).data).toEqual({ transferred: true })
    t.clock.advance(HOUR / 2)
    await sweep()
    expect(await holdOf(t.database.db, user.id, to)).toMatchObject({
      status: 'released',
      transferredFrom: from,
    })
    expect(await summaryOf(client)).toEqual({ available: 5, held: 0, automation: 5 })
  })

  it('releases a backlog of more than one batch in one sweep', async () => {
    const { client, user } = await signedInClient(t)
    await grantCredits(t.database.db, user.id, 300)
    const orders = Array.from({ length: 230 }, (_, i) => `PO-backlog-${String(i).padStart(3, '0')}`)
    for (const order of orders) await placeHold(client, order, 1)
    t.clock.advance(HOUR)
    expect(await sweep()).toBeGreaterThanOrEqual(orders.length)
    expect(await summaryOf(client)).toEqual({ available: 300, held: 0, automation: 300 })
    const rows = await t.database.db.select().from(creditHolds).where(eq(creditHolds.userId, user.id))
    expect(rows.map((row) => row.status)).toEqual(orders.map(() => 'released'))
  })
})

describe('the sweep in the background', () => {
  // Holds placed here never expire (HOLD_TTL_HOURS=0); another instance with a TTL releases them.
  const a = appUnderTest({ env: { HOLD_TTL_HOURS: '0' } })

  it('runs once an instance is up and logs one line with the count; HOLD_TTL_HOURS=0 never expires', async () => {
    // Placed an hour and a half ago (a's clock moved back for it), as the other app's clock starts now.
    a.clock.advance(-1.5 * HOUR)
    const { client, user } = await signedInClient(a)
    await grantCredits(a.database.db, user.id, 10)
    await placeHold(client, 'PO-1', 1)
    await placeHold(client, 'PO-2', 2)
    a.clock.advance(1.5 * HOUR)
    expect(await a.app.services.holds.expireHeld()).toBe(0)
    expect((await holdOf(a.database.db, user.id, 'PO-1'))?.status).toBe('held')

    const log = memoryLog()
    const b = await buildTestApp({ env, database: sharedDatabase(a.database), loggerInstance: log.logger })
    try {
      await vi.waitFor(
        async () => expect(await summaryOf(client)).toEqual({ available: 10, held: 0, automation: 10 }),
        { timeout: 10_000 },
      )
      expect((await holdOf(a.database.db, user.id, 'PO-2'))?.status).toBe('released')
      const lines = log.lines().filter((line) => line.msg === 'credit holds: expired holds released')
      expect(lines).toEqual([expect.objectContaining({ released: 2, level: 30 })])
    } finally {
      await b.close()
    }
  }, 60_000)
})

// Two instances on one PostgreSQL and one Redis (CI's server run), sweeping at the same moment: the
// advisory lock lets one sweep at a time, and each hold is released, announced and notified once.
// (Each test builds its two apps itself, hence the longer time-outs on a loaded machine.)
const postgresUrl = process.env.TEST_DATABASE_URL
const redisUrl = process.env.TEST_REDIS_URL

describe.each(postgresUrl && redisUrl ? [redisUrl] : [])('two instances sweeping together', (url) => {
  it('release each expired hold exactly once, with one event and one notification per hold', async () => {
    const shared = {
      ...env,
      REVERB_APP_ID: `app-${randomBytes(3).toString('hex')}`,
      REVERB_APP_KEY: `key-${randomBytes(8).toString('hex')}`,
      REVERB_APP_SECRET: randomBytes(24).toString('hex'),
    }
    await withTwoInstances(url, shared, async (a, b) => {
      const db = a.database.db
      const perUser = [120, 40, 40]
      const users: { client: TestClient; userId: number; orders: string[]; socket: PusherSocket }[] = []
      for (const [n, count] of perUser.entries()) {
        const { client, user } = await signedInClient(a)
        await grantCredits(db, user.id, count)
        const orders = Array.from({ length: count }, (_, i) => `PO-${n}-${i}`)
        await Promise.all(orders.map((order) => placeHold(client, order, 1)))
        const channel = `private-App.Models.User.${user.id}`
        const socket = await PusherSocket.open(a.baseUrl, a.config.realtime.key)
        const auth = await client.post('/api/broadcasting/auth', {
          socket_id: socket.socketId,
          channel_name: channel,
        })
        expect(auth.status).toBe(200)
        await socket.subscribe(channel, auth.data.auth)
        users.push({ client, userId: user.id, orders, socket })
      }
      const total = perUser.reduce((sum, n) => sum + n, 0)
      const events: { instance: string; holdId: number; expired: boolean | undefined }[] = []
      for (const [instance, app] of [
        ['a', a],
        ['b', b],
      ] as const) {
        app.app.events.on('CreditHoldChanged', (e) => {
          if (e.transition === 'released') events.push({ instance, holdId: e.hold.id, expired: e.expired })
        })
      }
      a.clock.advance(HOUR)
      b.clock.advance(HOUR)

      const released = await Promise.all([
        a.app.services.holds.expireHeld(),
        b.app.services.holds.expireHeld(),
      ])
      expect(released[0] + released[1]).toBe(total)

      const holdIds = events.map((e) => e.holdId)
      expect(new Set(holdIds).size).toBe(total)
      expect(holdIds).toHaveLength(total)
      expect(events.every((e) => e.expired === true)).toBe(true)

      const isNotification = (frame: Frame) => frame.data?.type === 'order-status-updated'
      for (const { client, userId, orders, socket } of users) {
        await eventually(() => socket.frames.filter(isNotification).length >= orders.length, 5000)
        const [account] = await db.select().from(creditAccounts).where(eq(creditAccounts.userId, userId))
        expect(account).toMatchObject({ held: '0.0000', balance: `${orders.length}.0000` })
        expect(await summaryOf(client)).toEqual({
          available: orders.length,
          held: 0,
          automation: orders.length,
        })
        expect((await ledgerRows(db, userId)).map((row) => row.kind)).toEqual(['admin_adjustment'])
      }
      await settle(500)
      for (const { orders, socket } of users) {
        const notified = socket.frames.filter(isNotification).map((frame) => frame.data)
        expect(notified.map((n) => n.broker_parent_order_id).sort()).toEqual([...orders].sort())
        expect(notified.every((n) => n.status === 'released')).toBe(true)
        socket.close()
      }
    })
  }, 90_000)

  it('an instance that finds the sweep under way elsewhere leaves the holds to it', async () => {
    await withTwoInstances(url, env, async (a, b) => {
      const { client, user } = await signedInClient(a)
      await grantCredits(a.database.db, user.id, 5)
      await placeHold(client, 'PO-locked', 2)
      b.clock.advance(HOUR)
      // Another sweep holds the lock (here a transaction of the test's, on another connection).
      const whileLocked = await a.database.db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${EXPIRY_SWEEP_LOCK})`)
        return b.app.services.holds.expireHeld()
      })
      expect(whileLocked).toBe(0)
      expect((await holdOf(a.database.db, user.id, 'PO-locked'))?.status).toBe('held')
      expect(await b.app.services.holds.expireHeld()).toBe(1)
      expect((await holdOf(a.database.db, user.id, 'PO-locked'))?.status).toBe('released')
    })
  }, 90_000)
})
