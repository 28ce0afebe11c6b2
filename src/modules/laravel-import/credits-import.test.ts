import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { asc } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { type CliEnvironment, createCliEnvironment } from '../../../test/helpers/cli.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { createUser, creditFigures, grantCredits, signedInClient } from '../../../test/helpers/factories.ts'
import { projectRoot } from '../../../test/helpers/project-root.ts'
import { openConfiguredDatabase } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import {
  creditAccounts,
  creditHolds,
  creditTransactions,
  laravelImportedHolds,
  laravelImportedUsers,
} from '../../db/schema/index.ts'

// `npm run cli -- import:laravel-credits`, run as a process on the CLI's own database, then the
// users' credits seen through the HTTP API as the app sees them.

let cliEnv: CliEnvironment
const cli = (args: string[]) => cliEnv.run(args)
const openCliDatabase = () => openConfiguredDatabase(loadConfig(cliEnv.env, projectRoot))
const PASSWORD = 'correct horse battery'
const TIMEOUT = { timeout: 180_000 }

const file = (name: string, content: string | Buffer) => {
  const path = join(cliEnv.dataDir, name)
  writeFileSync(path, content)
  return path
}
const referenceOf = (content: string | Buffer) =>
  `laravel-import:${createHash('sha256').update(content).digest('hex').slice(0, 12)}`

// As a spreadsheet saves it: a byte order mark, CRLF, quoted fields (one with a comma, one with a
// line break, so the lines after it are numbered as an editor shows them), a blank line.
const BALANCES = `\ufeff${[
  'user,credits', // 1
  '"Alice@Example.COM",120', // 2
  '501,40', // 3: bob, by his id in the Laravel original
  'carol@example.test,0', // 4
  'dave@example.test,7', // 5
  'erin@example.test,10', // 6
  'erin@example.test,11', // 7
  'nobody@example.test,5', // 8
  '999,5', // 9
  '"bad\r\nuser",5', // 10-11
  'grace@example.test,-5', // 12
  'heidi@example.test,12.5.1', // 13
  '"x,y@example.test",3', // 14
  '', // 15
  'ivan@example.test,"2.50"', // 16
].join('\r\n')}\r\n`

// As a database client writes it: LF, MySQL's times and ISO 8601, the columns in another order.
const HOLDS = `${[
  'broker_parent_order_id,user,credits,created_at,broker_account_hash', // 1
  'A-1,alice@example.com,3,2025-12-01 10:00:00,hash-a', // 2: a year old
  'A-2,ALICE@example.com,2,2026-12-07T23:00:00Z,', // 3
  'A-2,alice@example.com,2,2026-12-07T23:00:00Z,', // 4
  'B-1,Bob@Example.test,10,2026-11-30 08:00:00,', // 5
  'C-1,carol@example.test,5,2026-12-01 00:00:00,', // 6
  'D-1,dave@example.test,1,2026-12-01 00:00:00,', // 7
  'E-1,501,0,2026-12-01 00:00:00,', // 8
  'F-1,alice@example.com,1,yesterday,', // 9
  'G-1,nobody@example.test,1,2026-12-01 00:00:00,', // 10
  'B-2,501,30,2026-12-01 00:00:00,', // 11
  'B-3,501,1,2026-12-01 00:00:00,', // 12
].join('\n')}\n`

const users = { alice: 0, bob: 0, carol: 0, erin: 0, ivan: 0, frank: 0, dave: 0 }
/** Rows whose first field is a user id, by that id (ids grow in the order the users were made). */
const byUser = (a: unknown[], b: unknown[]) => Number(a[0]) - Number(b[0])
let daveHold = 0
let paths = { balances: '', holds: '' }

/** Every row the import writes or reads, to compare the database before and after a run. */
async function creditTables() {
  const database = await openCliDatabase()
  try {
    const { db } = database
    return {
      accounts: await db.select().from(creditAccounts).orderBy(asc(creditAccounts.userId)),
      ledger: await db.select().from(creditTransactions).orderBy(asc(creditTransactions.id)),
      holds: await db.select().from(creditHolds).orderBy(asc(creditHolds.id)),
      imported: await db.select().from(laravelImportedHolds).orderBy(asc(laravelImportedHolds.holdId)),
    }
  } finally {
    await database.close()
  }
}

const expectedProblems = () =>
  [
    'Not imported:',
    `${paths.balances} line 6: user erin@example.test is on lines 6, 7 with different credits: none imported`,
    `${paths.balances} line 7: user erin@example.test is on lines 6, 7 with different credits: none imported`,
    `${paths.balances} line 8: unknown user: no user has the email nobody@example.test`,
    `${paths.balances} line 9: unknown user: no user was imported with the Laravel user id 999 (import the users first)`,
    `${paths.balances} line 10: "bad\\r\\nuser" is neither an email nor a user id of the Laravel original`,
    `${paths.balances} line 12: credits must not be negative (-5)`,
    `${paths.balances} line 13: "12.5.1" is not a number of credits (a whole number, or at most 4 decimals)`,
    `${paths.balances} line 14: unknown user: no user has the email x,y@example.test`,
    `${paths.holds} line 4: repeats line 3 (the hold of order A-2): imported once`,
    `${paths.holds} line 6: the spendable credits (0: balance 0 less 0 held) do not cover the hold's 5`,
    `${paths.holds} line 7: the order has a hold already (hold ${daveHold}, placed here)`,
    `${paths.holds} line 8: a hold of 0 credits holds nothing`,
    `${paths.holds} line 9: "yesterday" is not a time (ISO 8601, or YYYY-MM-DD HH:MM:SS in UTC)`,
    `${paths.holds} line 10: unknown user: no user has the email nobody@example.test`,
    `${paths.holds} line 12: the spendable credits (0: balance 40 less 40 held) do not cover the hold's 1`,
    '',
  ].join('\n')

beforeAll(async () => {
  cliEnv = await createCliEnvironment()
  paths = { balances: file('balances.csv', BALANCES), holds: file('holds.csv', HOLDS) }
  const t = await buildTestApp({ database: await openCliDatabase() })
  try {
    const db = t.database.db
    for (const name of ['alice', 'bob', 'carol', 'erin', 'ivan', 'frank'] as const) {
      const domain = name === 'alice' ? 'example.com' : 'example.test'
      users[name] = (await createUser(db, { email: `${name}@${domain}`, password: PASSWORD })).user.id
    }
    // Bob came across with the users import, which records his id in the original.
    await db.insert(laravelImportedUsers).values({ oldId: 501, userId: users.bob })
    // Dave already holds credits for order D-1 here: the file's hold of that order must not replace it.
    const dave = await signedInClient(t, { email: 'dave@example.test', password: PASSWORD })
    users.dave = dave.user.id
    await grantCredits(db, users.dave, 10)
    const hold = await dave.client.post('/api/credit-holds', {
      broker_parent_order_id: 'D-1',
      credits_amount: 1,
    })
    expect(hold.status).toBe(201)
    daveHold = hold.data.id
  } finally {
    await t.close()
  }
}, 180_000)

afterAll(() => cliEnv.cleanup())

describe('cli import:laravel-credits', () => {
  let imported: Awaited<ReturnType<typeof creditTables>>

  test(
    '--dry-run reports what it would import, line by line, and writes nothing; a bad file stops it all',
    TIMEOUT,
    async () => {
      const before = await creditTables()
      const dry = await cli([
        'import:laravel-credits',
        '--balances',
        paths.balances,
        '--holds',
        paths.holds,
        '--dry-run',
      ])
      expect(dry.code, dry.stderr).toBe(2)
      expect(dry.stdout).toContain(': dry run, nothing written.\n')
      expect(dry.stdout).toContain(
        `  ${paths.balances} (${referenceOf(BALANCES)}): 13 lines: 4 to import (169.5 credits), 0 already imported, 1 of 0 credits (nothing to write), 8 not imported\n`,
      )
      expect(dry.stdout).toContain(
        `  ${paths.holds} (${referenceOf(HOLDS)}): 11 lines: 4 to import (45 credits), 0 already imported, 7 not imported\n`,
      )
      expect(dry.stdout).toContain('  4 users would get credits or holds.\n')
      expect(dry.stderr).toBe(expectedProblems())

      // The holds file names no created_at column: the balances, readable as they are, wait with it.
      const noTimes = file('no-times.csv', 'user,broker_parent_order_id,credits\nalice@example.com,Z-1,1\n')
      const refused = await cli(['import:laravel-credits', '--balances', paths.balances, '--holds', noTimes])
      expect(refused).toEqual({
        code: 1,
        stdout: '',
        stderr: `${noTimes}: the first line must name the columns user, broker_parent_order_id, credits, created_at, [broker_account_hash]; it names user, broker_parent_order_id, credits.\nNothing was imported.\n`,
      })
      const missing = await cli(['import:laravel-credits', '--balances', join(cliEnv.dataDir, 'none.csv')])
      expect(missing.code).toBe(1)
      expect(missing.stderr).toMatch(/^balances: .*none\.csv cannot be read \(ENOENT\)\.\n$/)
      expect((await cli(['import:laravel-credits'])).code).toBe(1)

      expect(await creditTables()).toEqual(before)
    },
  )

  test(
    'imports the balances as opening rows and the holds as held, reporting each line it cannot import',
    TIMEOUT,
    async () => {
      const startedAt = new Date()
      const result = await cli([
        'import:laravel-credits',
        '--balances',
        paths.balances,
        '--holds',
        paths.holds,
      ])
      expect(result.code, result.stderr).toBe(2)
      expect(result.stdout).toMatch(/^Laravel credits import \((PGlite|PostgreSQL) .+\)\.\n/)
      expect(result.stdout).toContain(
        `  ${paths.balances} (${referenceOf(BALANCES)}): 13 lines: 4 imported (169.5 credits), 0 already imported, 1 of 0 credits (nothing to write), 8 not imported\n`,
      )
      expect(result.stdout).toContain(
        `  ${paths.holds} (${referenceOf(HOLDS)}): 11 lines: 4 imported (45 credits), 0 already imported, 7 not imported\n`,
      )
      expect(result.stdout).toContain('  4 users got credits or holds.\n')
      expect(result.stdout).toMatch(
        /The holds imported expire from \S+Z \(HOLD_TTL_HOURS after their import\) unless captured or released\.\n$/,
      )
      expect(result.stderr).toBe(expectedProblems())

      imported = await creditTables()
      // Users are imported side by side: their rows in any order, each user's in file order.
      const opening = imported.ledger.filter((row) => row.kind === 'opening_balance')
      expect(
        opening.map((row) => [row.userId, row.amount, row.balanceAfter, row.reference]).sort(byUser),
      ).toEqual([
        [users.alice, '120.0000', '120.0000', referenceOf(BALANCES)],
        [users.bob, '40.0000', '40.0000', referenceOf(BALANCES)],
        [users.ivan, '2.5000', '2.5000', referenceOf(BALANCES)],
        [users.dave, '7.0000', '17.0000', referenceOf(BALANCES)],
      ])
      const importedHolds = imported.holds.filter((hold) =>
        imported.imported.some((i) => i.holdId === hold.id),
      )
      // The original's creation time is kept beside the hold; the hold counts from the import.
      const originalTime = (holdId: number) =>
        imported.imported.find((row) => row.holdId === holdId)?.originalCreatedAt.toISOString()
      expect(
        importedHolds
          .map((h) => [h.userId, h.brokerParentOrderId, h.creditsAmount, h.status, originalTime(h.id)])
          .sort(byUser),
      ).toEqual([
        [users.alice, 'A-1', '3.0000', 'held', '2025-12-01T10:00:00.000Z'],
        [users.alice, 'A-2', '2.0000', 'held', '2026-12-07T23:00:00.000Z'],
        [users.bob, 'B-1', '10.0000', 'held', '2026-11-30T08:00:00.000Z'],
        [users.bob, 'B-2', '30.0000', 'held', '2026-12-01T00:00:00.000Z'],
      ])
      expect(imported.imported.map((row) => row.reference)).toEqual(Array(4).fill(referenceOf(HOLDS)))
      for (const [i, hold] of importedHolds.entries()) {
        expect(hold.createdAt).toEqual(imported.imported[i]?.importedAt)
        expect(hold.createdAt.getTime()).toBeGreaterThanOrEqual(startedAt.getTime())
      }
    },
  )

  test('importing the same files again changes nothing', TIMEOUT, async () => {
    const again = await cli(['import:laravel-credits', '--balances', paths.balances, '--holds', paths.holds])
    expect(again.code).toBe(2)
    expect(again.stdout).toContain(
      `(${referenceOf(BALANCES)}): 13 lines: 0 imported (0 credits), 4 already imported, 1 of 0 credits (nothing to write), 8 not imported\n`,
    )
    expect(again.stdout).toContain(
      `(${referenceOf(HOLDS)}): 11 lines: 0 imported (0 credits), 4 already imported, 7 not imported\n`,
    )
    expect(again.stdout).toContain('  0 users got credits or holds.\n')
    expect(again.stderr).toBe(expectedProblems())
    expect(await creditTables()).toEqual(imported)
  })

  describe('the app', () => {
    let t: TestApp
    const signIn = async (email: string) => {
      const client = new TestClient(t.baseUrl)
      const res = await client.post('/api/login', { email, password: PASSWORD })
      expect(res.status).toBe(200)
      return client
    }
    beforeAll(async () => {
      // Holds expire after an hour here: the year-old hold A-1 must still be held once the app is up.
      t = await buildTestApp({ database: await openCliDatabase(), env: { HOLD_TTL_HOURS: '1' } })
    }, 180_000)
    afterAll(() => t?.close())

    test(
      'shows the balances, the opening rows with their reference, and the holds, which settle by order id',
      TIMEOUT,
      async () => {
        const alice = await signIn('alice@example.com')
        expect(await creditFigures(alice)).toEqual({ available: 120, held: 5, spendable: 115 })
        const history = await alice.get('/api/transaction-history')
        expect(history.data.data).toEqual([
          {
            id: expect.any(Number),
            kind: 'opening_balance',
            amount: 120,
            balance_after: 120,
            reference: referenceOf(BALANCES),
            reason: 'Opening balance brought across from the Laravel original',
            created_at: expect.any(String),
            purchase: null,
          },
        ])
        const list = await alice.get('/api/credit-holds')
        expect(
          list.data.data.map((h: Record<string, unknown>) => [
            h.broker_parent_order_id,
            h.status,
            h.credits_amount,
            h.broker_account_hash,
          ]),
        ).toEqual([
          ['A-2', 'held', 2, null],
          ['A-1', 'held', 3, 'hash-a'],
        ])

        expect(await t.app.services.holds.expireHeld()).toBe(0)
        const capture = await alice.post('/api/credit-holds/capture', { broker_parent_order_id: 'A-1' })
        expect(capture.data).toEqual({ captured: true })
        expect(await creditFigures(alice)).toEqual({ available: 117, held: 2, spendable: 115 })

        const bob = await signIn('bob@example.test')
        expect(await creditFigures(bob)).toEqual({ available: 40, held: 40, spendable: 0 })
        const release = await bob.post('/api/credit-holds/release', { broker_parent_order_id: 'B-2' })
        expect(release.data).toEqual({ released: true })
        expect(await creditFigures(bob)).toEqual({ available: 40, held: 10, spendable: 30 })

        const dave = await signIn('dave@example.test')
        expect(await creditFigures(dave)).toEqual({ available: 17, held: 1, spendable: 16 })
        const carol = await signIn('carol@example.test')
        expect(await creditFigures(carol)).toEqual({ available: 0, held: 0, spendable: 0 })
        expect(await creditFigures(await signIn('ivan@example.test'))).toEqual({
          available: 2.5,
          held: 0,
          spendable: 2.5,
        })

        // HOLD_TTL_HOURS after the import, the holds left expire as any hold does.
        t.clock.advance(3_600_000 + 60_000)
        await t.app.services.holds.expireHeld()
        expect(await creditFigures(alice)).toEqual({ available: 117, held: 0, spendable: 117 })
        expect(await creditFigures(bob)).toEqual({ available: 40, held: 0, spendable: 40 })
      },
    )
  })

  test(
    'ledger:audit passes and ledger:export lists the opening rows with the import as their reference',
    TIMEOUT,
    async () => {
      const audit = await cli(['ledger:audit'])
      expect(audit.stderr).toBe('')
      expect(audit.code).toBe(0)

      const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
      const exported = await cli(['ledger:export', '--from', day(-1), '--to', day(1), '--format', 'jsonl'])
      expect(exported.code, exported.stderr).toBe(0)
      const rows = exported.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
      const pick = (row: Record<string, unknown>) => [
        row.user_id,
        row.kind,
        row.amount,
        row.import_id,
        row.order_id,
      ]
      // Oldest first: Dave's grant before the import, the opening rows, then the capture.
      expect(rows.map(pick)[0]).toEqual([users.dave, 'admin_adjustment', '10.0000', null, null])
      expect(rows.slice(1, 5).map(pick).sort(byUser)).toEqual([
        [users.alice, 'opening_balance', '120.0000', referenceOf(BALANCES), null],
        [users.bob, 'opening_balance', '40.0000', referenceOf(BALANCES), null],
        [users.ivan, 'opening_balance', '2.5000', referenceOf(BALANCES), null],
        [users.dave, 'opening_balance', '7.0000', referenceOf(BALANCES), null],
      ])
      expect(rows.slice(5).map(pick)).toEqual([[users.alice, 'hold_capture', '-3.0000', null, 'A-1']])
    },
  )

  test(
    'a later file credits nobody twice: a user with an opening balance is reported, the others imported',
    TIMEOUT,
    async () => {
      const LATER = 'user,credits\nalice@example.com,500\nfrank@example.test,25\n'
      const later = file('later.csv', LATER)
      const before = await creditTables()
      const result = await cli(['import:laravel-credits', '--balances', later])
      expect(result.code).toBe(2)
      expect(result.stdout).toContain(
        `  ${later} (${referenceOf(LATER)}): 2 lines: 1 imported (25 credits), 0 already imported, 1 not imported\n`,
      )
      expect(result.stderr).toBe(
        `Not imported:\n${later} line 2: the user has an opening balance already (${referenceOf(BALANCES)}, 120 credits): not credited twice; an admin adjustment corrects it\n`,
      )
      const after = await creditTables()
      const added = after.ledger.slice(before.ledger.length)
      expect(added.map((row) => [row.userId, row.kind, row.amount, row.reference])).toEqual([
        [users.frank, 'opening_balance', '25.0000', referenceOf(LATER)],
      ])
      expect((await cli(['ledger:audit'])).code).toBe(0)
    },
  )
})
