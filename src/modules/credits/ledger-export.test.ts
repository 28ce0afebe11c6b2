import { eq, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { buildTestApp } from '../../../test/helpers/build-test-app.ts'
import { type CliEnvironment, createCliEnvironment } from '../../../test/helpers/cli.ts'
import { confirmPassword, signedInClient } from '../../../test/helpers/factories.ts'
import { projectRoot } from '../../../test/helpers/project-root.ts'
import { openConfiguredDatabase } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import { creditPurchases, creditTransactions } from '../../db/schema/index.ts'
import { systemClock } from '../../lib/clock.ts'
import { createLedgerService } from './ledger.service.ts'
import { LEDGER_EXPORT_COLUMNS } from './ledger-export.ts'

// `npm run cli -- ledger:export` and `ledger:audit`, run as processes on the CLI's own database.

let cliEnv: CliEnvironment
const cli = (args: string[]) => cliEnv.run(args)
const openCliDatabase = () => openConfiguredDatabase(loadConfig(cliEnv.env, projectRoot))

// The reason an admin typed: a comma, quotes, a line break, and a spreadsheet formula.
const TRICKY_REASON = '=HYPERLINK("http://evil.test"), "goodwill"\nsecond line'
const DAY = '2026-11-30'

const users = { trader: 0, other: 0, admin: 0 }
const rowIds: Record<string, number> = {}
let holdId = 0
let purchaseId = 0

/** RFC 4180 records (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (quoted && c === '"' && text[i + 1] === '"') {
      field += '"'
      i++
    } else if (c === '"') {
      quoted = !quoted
    } else if (quoted) {
      field += c
    } else if (c === ',') {
      record.push(field)
      field = ''
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field)
      records.push(record)
      record = []
      field = ''
      i++
    } else {
      field += c
    }
  }
  if (field !== '' || record.length > 0) throw new Error('CSV does not end with CRLF')
  return records
}

/** The CSV as objects keyed by the header's columns. */
function csvObjects(text: string): Record<string, string>[] {
  const [header, ...records] = parseCsv(text)
  expect(header).toEqual([...LEDGER_EXPORT_COLUMNS])
  return records.map((record) =>
    Object.fromEntries(header?.map((column, i) => [column, record[i] ?? '']) ?? []),
  )
}

const jsonObjects = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)

beforeAll(async () => {
  cliEnv = await createCliEnvironment()
  expect((await cli(['migrate'])).code).toBe(0)
  const t = await buildTestApp({ database: await openCliDatabase() })
  try {
    const db = t.database.db
    const admin = await signedInClient(t, { isAdmin: true, verified: true })
    const trader = await signedInClient(t, { verified: true })
    const other = await signedInClient(t, { verified: true })
    users.admin = admin.user.id
    users.trader = trader.user.id
    users.other = other.user.id
    const billing = (id: number) => `/api/admin/users/${id}/billing`

    // Through the HTTP API: an admin adjustment, a package, a hold placed then captured.
    await confirmPassword(admin.client, admin.password)
    const adjust = await admin.client.post(`${billing(users.trader)}/adjust`, {
      amount: 100.5,
      reason: TRICKY_REASON,
    })
    expect(adjust.status).toBe(200)
    expect(
      (await admin.client.post(`${billing(users.trader)}/package`, { package_id: 'pro', reason: 'Upgrade' }))
        .status,
    ).toBe(200)
    const hold = await trader.client.post('/api/credit-holds', {
      broker_parent_order_id: 'ORD-42',
      credits_amount: 2.25,
    })
    expect(hold.status).toBe(201)
    holdId = (hold.data as { id: number }).id
    const capture = await trader.client.post('/api/credit-holds/capture', {
      broker_parent_order_id: 'ORD-42',
    })
    expect(capture.status).toBe(200)
    expect(
      (await admin.client.post(`${billing(users.other)}/adjust`, { amount: 7, reason: 'welcome' })).status,
    ).toBe(200)

    // Through the ledger service: a purchase credited before purchases were recorded (its checkout
    // session only in the reference), a recorded purchase, its partial refund and its dispute.
    const [purchase] = await db
      .insert(creditPurchases)
      .values({
        userId: users.trader,
        checkoutSessionId: 'cs_test_recorded',
        paymentIntentId: 'pi_test_recorded',
        packageId: 'pro',
        credits: '50',
        amount: 5000,
        currency: 'usd',
        status: 'paid',
        // What the refund and the dispute below took, as the webhook records it (the ledger audit checks).
        amountRefunded: 1235,
        creditsRefunded: '12.3456',
        disputeId: 'dp_test_1',
        disputeStatus: 'open',
        creditsDisputed: '20',
        createdAt: new Date(),
        updatedAt: new Date(),
      })
      .returning()
    purchaseId = purchase?.id ?? 0
    const ledger = createLedgerService({ db, clock: systemClock })
    const append = (entry: Parameters<typeof ledger.append>[1]) =>
      ledger.withLockedAccount(entry.userId, (tx) => ledger.append(tx, entry))
    const userId = users.trader
    await append({ userId, amount: '10', kind: 'purchase', reference: 'cs_test_legacy', reason: 'Stripe' })
    await append({ userId, amount: '50', kind: 'purchase', reference: 'cs_test_recorded', purchaseId })
    await append({ userId, amount: '-12.3456', kind: 'refund', reference: 're_test_1', purchaseId })
    await append({ userId, amount: '-20', kind: 'dispute_withheld', reference: 'dp_test_1', purchaseId })

    // Each row at a time of its own around the day exported (the test clock stood still).
    const times: [string, string][] = [
      ['adjust', `${DAY}T00:00:00.000000Z`],
      ['package', `${DAY}T08:00:00.000001Z`],
      ['capture', `${DAY}T09:30:00.000000Z`],
      ['other', `${DAY}T10:00:00.000000Z`],
      ['legacy', `${DAY}T11:00:00.000000Z`],
      ['purchase', `${DAY}T12:00:00.000000Z`],
      ['refund', `${DAY}T23:59:59.999999Z`],
      ['dispute', '2026-12-01T00:00:00.000000Z'],
    ]
    const rows = await db
      .select({ id: creditTransactions.id })
      .from(creditTransactions)
      .orderBy(creditTransactions.id)
    expect(rows).toHaveLength(times.length)
    for (const [i, [name, at]] of times.entries()) {
      const id = rows[i]?.id ?? 0
      rowIds[name] = id
      await db.execute(sql`update credit_transactions set created_at = ${at}::timestamptz where id = ${id}`)
    }
  } finally {
    await t.close()
  }
}, 180_000)

afterAll(() => cliEnv.cleanup())

describe('cli ledger:export', () => {
  test('writes the CSV of the day: every column, the references by kind, the balances, the escaping', {
    timeout: 180_000,
  }, async () => {
    const result = await cli(['ledger:export', '--from', DAY, '--to', DAY])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    // The reason quoted (comma, quotes, line break), its leading = defused with a quote character.
    expect(result.stdout).toContain(`,"'=HYPERLINK(""http://evil.test""), ""goodwill""\nsecond line",`)
    const none = {
      purchase_id: '',
      checkout_session_id: '',
      payment_intent_id: '',
      hold_id: '',
      order_id: '',
    }
    const empty = {
      ...none,
      refund_id: '',
      dispute_id: '',
      package_id: '',
      feature_id: '',
      ai_call_id: '',
      import_id: '',
    }
    const { trader, other, admin } = users
    expect(csvObjects(result.stdout)).toEqual([
      {
        ...empty,
        id: String(rowIds.adjust),
        created_at: `${DAY}T00:00:00.000000Z`,
        user_id: String(trader),
        kind: 'admin_adjustment',
        amount: '100.5000',
        balance_after: '100.5000',
        reason: `'${TRICKY_REASON}`,
        admin_id: String(admin),
      },
      {
        ...empty,
        id: String(rowIds.package),
        created_at: `${DAY}T08:00:00.000001Z`,
        user_id: String(trader),
        kind: 'package',
        amount: expect.stringMatching(/^\d+\.0000$/),
        balance_after: expect.stringMatching(/^\d+\.\d{4}$/),
        reason: 'Package "Pro" granted by an admin',
        package_id: 'pro',
        admin_id: String(admin),
      },
      {
        ...empty,
        id: String(rowIds.capture),
        created_at: `${DAY}T09:30:00.000000Z`,
        user_id: String(trader),
        kind: 'hold_capture',
        amount: '-2.2500',
        balance_after: expect.stringMatching(/^\d+\.2500$/),
        reason: '',
        hold_id: String(holdId),
        order_id: 'ORD-42',
        admin_id: '',
      },
      {
        ...empty,
        id: String(rowIds.other),
        created_at: `${DAY}T10:00:00.000000Z`,
        user_id: String(other),
        kind: 'admin_adjustment',
        amount: '7.0000',
        balance_after: '7.0000',
        reason: 'welcome',
        admin_id: String(admin),
      },
      {
        ...empty,
        id: String(rowIds.legacy),
        created_at: `${DAY}T11:00:00.000000Z`,
        user_id: String(trader),
        kind: 'purchase',
        amount: '10.0000',
        balance_after: expect.any(String),
        reason: 'Stripe',
        checkout_session_id: 'cs_test_legacy',
        admin_id: '',
      },
      {
        ...empty,
        id: String(rowIds.purchase),
        created_at: `${DAY}T12:00:00.000000Z`,
        user_id: String(trader),
        kind: 'purchase',
        amount: '50.0000',
        balance_after: expect.any(String),
        reason: '',
        purchase_id: String(purchaseId),
        checkout_session_id: 'cs_test_recorded',
        payment_intent_id: 'pi_test_recorded',
        admin_id: '',
      },
      {
        ...empty,
        id: String(rowIds.refund),
        created_at: `${DAY}T23:59:59.999999Z`,
        user_id: String(trader),
        kind: 'refund',
        amount: '-12.3456',
        balance_after: expect.any(String),
        reason: '',
        purchase_id: String(purchaseId),
        checkout_session_id: 'cs_test_recorded',
        payment_intent_id: 'pi_test_recorded',
        refund_id: 're_test_1',
        admin_id: '',
      },
    ])
  })

  test('balance_after is the running balance of each user, exact to the fourth decimal', {
    timeout: 180_000,
  }, async () => {
    const result = await cli([
      'ledger:export',
      '--from',
      '2026-11-01',
      '--to',
      '2026-12-31',
      '--format',
      'jsonl',
    ])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    const rows = jsonObjects(result.stdout)
    expect(rows).toHaveLength(8)
    // Summed in 1/10000 units, so no float ever rounds.
    const units = (value: unknown) => BigInt(String(value).replace('.', ''))
    const running = new Map<unknown, bigint>()
    for (const row of [...rows].sort((a, b) => Number(a.id) - Number(b.id))) {
      const balance = (running.get(row.user_id) ?? 0n) + units(row.amount)
      running.set(row.user_id, balance)
      expect(units(row.balance_after)).toBe(balance)
    }
  })

  test('--format jsonl: one JSON object per line, ids as numbers, amounts as exact strings, nulls', {
    timeout: 180_000,
  }, async () => {
    const result = await cli([
      'ledger:export',
      '--from',
      `${DAY}T09:30:00Z`,
      '--to',
      `${DAY}T23:59:59.999999Z`,
      '--format',
      'jsonl',
    ])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout.endsWith('\n')).toBe(true)
    const rows = jsonObjects(result.stdout)
    // A timestamp --to is exclusive: the refund at 23:59:59.999999 stays out.
    expect(rows.map((row) => row.id)).toEqual([rowIds.capture, rowIds.other, rowIds.legacy, rowIds.purchase])
    for (const row of rows) expect(Object.keys(row)).toEqual([...LEDGER_EXPORT_COLUMNS])
    expect(rows[0]).toEqual({
      id: rowIds.capture,
      created_at: `${DAY}T09:30:00.000000Z`,
      user_id: users.trader,
      kind: 'hold_capture',
      amount: '-2.2500',
      balance_after: expect.stringMatching(/^\d+\.2500$/),
      reason: null,
      purchase_id: null,
      checkout_session_id: null,
      payment_intent_id: null,
      hold_id: holdId,
      order_id: 'ORD-42',
      refund_id: null,
      dispute_id: null,
      package_id: null,
      feature_id: null,
      ai_call_id: null,
      admin_id: null,
      import_id: null,
    })
  })

  test('the period: --from inclusive, a bare --to date up to the end of that day, offsets honoured', {
    timeout: 180_000,
  }, async () => {
    const ids = async (...args: string[]) => {
      const result = await cli(['ledger:export', '--format', 'jsonl', ...args])
      expect(result).toMatchObject({ code: 0, stderr: '' })
      return jsonObjects(result.stdout).map((row) => row.id)
    }
    // The next day's first instant is the next day's.
    expect(await ids('--from', '2026-12-01', '--to', '2026-12-01')).toEqual([rowIds.dispute])
    // From one microsecond after midnight: the midnight row stays out.
    expect(await ids('--from', `${DAY}T00:00:00.000001Z`, '--to', `${DAY}T08:00:00.000002Z`)).toEqual([
      rowIds.package,
    ])
    // 09:30 UTC is 10:30 at +01:00.
    expect(await ids('--from', `${DAY}T10:30:00+01:00`, '--to', `${DAY}T10:00:00Z`)).toEqual([rowIds.capture])
  })

  test("--user keeps one user's rows; an empty period is the CSV header alone", {
    timeout: 180_000,
  }, async () => {
    const result = await cli([
      'ledger:export',
      '--from',
      DAY,
      '--to',
      '2026-12-01',
      '--user',
      String(users.other),
    ])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(csvObjects(result.stdout).map((row) => [row.id, row.user_id])).toEqual([
      [String(rowIds.other), String(users.other)],
    ])
    const empty = await cli(['ledger:export', '--from', '2020-01-01', '--to', '2020-01-02'])
    expect(empty).toEqual({ code: 0, stdout: `${LEDGER_EXPORT_COLUMNS.join(',')}\r\n`, stderr: '' })
  })

  test.each([
    [[], 'from: The from field is required.\nto: The to field is required.\n'],
    [
      ['--from', '2026-02-30', '--to', 'yesterday'],
      'from: The from field must be a date (YYYY-MM-DD) or an ISO 8601 timestamp.\n' +
        'to: The to field must be a date (YYYY-MM-DD) or an ISO 8601 timestamp.\n',
    ],
    [['--from', '2026-12-01', '--to', '2026-11-30'], 'to: The to field must be a date after from.\n'],
    [
      ['--from', `${DAY}T10:00:00Z`, '--to', `${DAY}T11:00:00+01:00`],
      'to: The to field must be a date after from.\n',
    ],
    [
      ['--from', DAY, '--to', DAY, '--user', 'abc', '--format', 'xlsx'],
      'user: The user field must be a positive integer.\nformat: The selected format is invalid (csv or jsonl).\n',
    ],
    [['--from', DAY, '--to', DAY, '--user', '0'], 'user: The user field must be a positive integer.\n'],
  ])('bad input %j exits 1 naming the field', async (args, message) => {
    expect(await cli(['ledger:export', ...args])).toEqual({ code: 1, stdout: '', stderr: message })
  })

  test('an unknown option exits 1 with the usage', async () => {
    const result = await cli(['ledger:export', '--from', DAY, '--to', DAY, '--since', DAY])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain("Unknown option '--since'")
    expect(result.stderr).toContain('ledger:export --from <date> --to <date>')
  })
})

describe('cli ledger:audit', () => {
  test('exits 0 with one line on a consistent ledger; exits 2 naming the check a broken balance_after breaks', {
    timeout: 180_000,
  }, async () => {
    const ok = await cli(['ledger:audit'])
    expect(ok).toMatchObject({ code: 0, stderr: '' })
    expect(ok.stdout).toMatch(/^Ledger audit \((PGlite|PostgreSQL) .+\): all \d+ checks hold\.\n$/)

    const database = await openCliDatabase()
    try {
      await database.db
        .update(creditTransactions)
        .set({ balanceAfter: sql`${creditTransactions.balanceAfter} + 1` })
        .where(eq(creditTransactions.id, rowIds.capture ?? 0))
    } finally {
      await database.close()
    }
    const broken = await cli(['ledger:audit'])
    expect(broken.code).toBe(2)
    expect(broken.stdout).toBe('')
    const total = Number(ok.stdout.match(/all (\d+) checks/)?.[1])
    const lines = broken.stderr.split('\n')
    expect(lines[0]).toMatch(
      new RegExp(`^Ledger audit \\((PGlite|PostgreSQL) .+\\): 1 of ${total} checks failed\\.$`),
    )
    expect(lines[1]).toBe('  FAILED  balance_after breaks the chain: 1 found')
    expect(lines.slice(2, -1)).toHaveLength(total - 1)
    for (const line of lines.slice(2, -1)) expect(line).toMatch(/^ {2}ok {6}\S/)
    expect(lines.at(-1)).toBe('')
  })

  test('refuses arguments', async () => {
    const result = await cli(['ledger:audit', '--fix'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("Unknown option '--fix'")
  })
})
