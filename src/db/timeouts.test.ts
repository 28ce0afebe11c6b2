import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type OwnPostgres, startOwnPostgres } from '../../test/helpers/own-postgres.ts'
import { type Database, openDatabase } from './client.ts'
import { databaseFailureOf } from './failures.ts'
import { DEFAULT_DATABASE_TIMEOUTS } from './timeouts.ts'

/** Every query on PostgreSQL is bounded: a statement, a lock wait, the wait for a pooled connection. */
describe('PostgreSQL time-outs', () => {
  let postgres: OwnPostgres
  const opened: Database[] = []
  const open = async (target: Omit<Parameters<typeof openDatabase>[0] & { url: string }, 'url'>) => {
    const database = await openDatabase({ url: postgres.url, ...target })
    opened.push(database)
    return database
  }
  const setting = async (database: Database, name: string) => {
    const result = (await database.db.execute(sql.raw(`show ${name}`))) as unknown as {
      rows: Record<string, string>[]
    }
    return result.rows[0]?.[name]
  }

  beforeAll(async () => {
    postgres = await startOwnPostgres()
  }, 60_000)
  afterAll(async () => {
    for (const database of opened) await database.close()
    await postgres?.destroy()
  })

  it("sets PostgreSQL's statement, lock and idle-transaction time-outs on every connection: short for requests, long for migrations and the CLI", async () => {
    const service = await open({})
    expect(await setting(service, 'statement_timeout')).toBe('5s')
    expect(await setting(service, 'lock_timeout')).toBe('3s')
    expect(await setting(service, 'idle_in_transaction_session_timeout')).toBe('5s')
    const cli = await open({ long: true })
    expect(await setting(cli, 'statement_timeout')).toBe('10min')
    expect(await setting(cli, 'lock_timeout')).toBe('10min')
    // Behind a transaction-mode pooler they are the pooler's connect_query (deploy/README.md, PgBouncer).
    expect(await setting(await open({ pooler: 'transaction' }), 'statement_timeout')).toBe('0')
  })

  it('ends a statement that runs over, as a time-out', async () => {
    const database = await open({ timeouts: { ...DEFAULT_DATABASE_TIMEOUTS, statementMs: 300 } })
    const started = Date.now()
    const error = await database.db.execute(sql`select pg_sleep(5)`).catch((e: unknown) => e)
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(databaseFailureOf(error)).toBe('timed-out')
  })

  it('a transaction left idle past the idle-transaction time-out fails as the database unavailable; the process and the pool carry on', async () => {
    const database = await open({ timeouts: { ...DEFAULT_DATABASE_TIMEOUTS, statementMs: 300 } })
    const error = await database.db
      .transaction(async (tx) => {
        await tx.execute(sql`select 1`)
        // PostgreSQL ends the session meanwhile: the checked-out client hears of it between statements.
        await new Promise((resolve) => setTimeout(resolve, 1_000))
        await tx.execute(sql`select 2`)
      })
      .catch((e: unknown) => e)
    expect(databaseFailureOf(error)).toBe('unavailable')
    const [row] = ((await database.db.execute(sql`select 3 as n`)) as unknown as { rows: { n: number }[] })
      .rows
    expect(row?.n).toBe(3)
  })

  it('gives up waiting for a pooled connection after the pool wait, as the database unavailable', async () => {
    const database = await open({ poolSize: 1, timeouts: { ...DEFAULT_DATABASE_TIMEOUTS, poolWaitMs: 300 } })
    // Drizzle's queries start when awaited: `then` sends it now.
    const busy = database.db.execute(sql`select pg_sleep(1.5)`).then(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const started = Date.now()
    const error = await database.db.execute(sql`select 1`).catch((e: unknown) => e)
    expect(Date.now() - started).toBeLessThan(1_000)
    expect(databaseFailureOf(error)).toBe('unavailable')
    await busy
  })
})
