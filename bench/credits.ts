/**
 * `npm run bench:credits`: create -> capture cycles on credit holds over HTTP, on PostgreSQL.
 *
 * A fresh database on the server of BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
 * is created and dropped again. 100 users sign in, get credits, and 32 concurrent clients each
 * run create -> capture for BENCH_SECONDS (10), cycling through the users. A baseline of plain
 * signed-in reads (GET /api/credits) runs first with the same clients, so the figure can be read
 * as a ratio on any machine. At the end the ledger is checked: chained balances, running totals
 * equal to the sums, one debit per captured hold and per successful capture answer.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { Pool } from 'undici'
import { buildApp } from '../src/app.ts'
import { generateAppKey, loadConfig } from '../src/config.ts'
import { openDatabase } from '../src/db/client.ts'
import { systemClock } from '../src/lib/clock.ts'
import { createLedgerService } from '../src/modules/credits/ledger.service.ts'
import { createUsersService } from '../src/modules/users/users.service.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS ?? 5)
const USERS = 100
const CLIENTS = 32

async function onServer(statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: SERVER_URL })
  await admin.connect()
  try {
    await admin.query(statement)
  } finally {
    await admin.end()
  }
}

interface Session {
  userId: number
  headers: Record<string, string>
}

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? 0
    : (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0)

interface RunResult {
  ops: number
  errors: number
  seconds: number
  latencies: number[]
  captured: number
}

/** CLIENTS loops for `seconds`, each calling `step` with the next session, timing every request. */
async function run(
  sessions: Session[],
  seconds: number,
  step: (session: Session, n: number, result: RunResult) => Promise<number[]>,
) {
  const result: RunResult = { ops: 0, errors: 0, seconds, latencies: [], captured: 0 }
  const started = performance.now()
  const deadline = started + seconds * 1000
  let counter = 0
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, worker) => {
      for (let i = worker; performance.now() < deadline; i += CLIENTS) {
        const session = sessions[i % sessions.length] as Session
        const timings = await step(session, counter++, result)
        result.latencies.push(...timings)
        result.ops += timings.length
      }
    }),
  )
  result.seconds = (performance.now() - started) / 1000
  result.latencies.sort((a, b) => a - b)
  return result
}

async function main() {
  const name = `bench_credits_${randomBytes(4).toString('hex')}`
  await onServer(`create database ${name}`)
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  const database = await openDatabase({ url: url.toString() })
  const dataDir = mkdtempSync(join(os.tmpdir(), 'bench-credits-'))
  const config = loadConfig(
    {
      NODE_ENV: 'test',
      APP_KEY: generateAppKey(),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      DATABASE_URL: url.toString(),
    },
    dataDir,
  )
  const app = await buildApp(config, { database })
  try {
    await app.listen({ host: '127.0.0.1', port: 0 })
    const address = app.server.address()
    if (!address || typeof address === 'string') throw new Error('no port')
    const http = new Pool(`http://127.0.0.1:${address.port}`, { connections: CLIENTS, pipelining: 1 })

    const users = createUsersService({ db: database.db, clock: systemClock })
    const ledger = createLedgerService({ db: database.db, clock: systemClock })
    const sessions: Session[] = []
    for (let i = 0; i < USERS; i++) {
      const email = `bench-${i}@example.com`
      const user = await users.create({ name: `Bench ${i}`, email, password: BENCH_PASSWORD, verified: true })
      await ledger.withLockedAccount(user.id, (tx) =>
        ledger.append(tx, { userId: user.id, amount: '1000000', kind: 'admin_adjustment', reason: 'bench' }),
      )
      sessions.push({ userId: user.id, headers: await signIn(http, email) })
    }

    const call = async (method: 'GET' | 'POST', path: string, session: Session, body?: unknown) => {
      const t0 = performance.now()
      const res = await http.request({
        path,
        method,
        headers: session.headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.body.text()
      return { status: res.statusCode, text, ms: performance.now() - t0 }
    }

    const baseline = await run(sessions, BASELINE_SECONDS, async (session, _n, result) => {
      const res = await call('GET', '/api/credits', session)
      if (res.status !== 200) result.errors++
      return [res.ms]
    })

    const cycles = await run(sessions, SECONDS, async (session, n, result) => {
      const order = `bench-${n}`
      const created = await call('POST', '/api/credit-holds', session, { broker_parent_order_id: order })
      const captured = await call('POST', '/api/credit-holds/capture', session, {
        broker_parent_order_id: order,
      })
      if (created.status !== 201 || captured.status !== 200) result.errors++
      if (captured.text === '{"captured":true}') result.captured++
      return [created.ms, captured.ms]
    })
    await http.close()

    // The ledger after the storm: every check is one SQL answer of 0 problems.
    const checker = new pg.Client({ connectionString: url.toString() })
    await checker.connect()
    const problems = await checker.query<{ check: string; n: string }>(`
      select 'balance_after breaks the chain' as check, count(*)::text as n from (
        select balance_after, sum(amount) over (partition by user_id order by id) as running from credit_transactions
      ) chain where balance_after <> running
      union all
      select 'account balance differs from the ledger sum', count(*)::text from credit_accounts a
        where a.balance <> (select coalesce(sum(amount), 0) from credit_transactions t where t.user_id = a.user_id)
      union all
      select 'account held differs from the held holds', count(*)::text from credit_accounts a
        where a.held <> (select coalesce(sum(credits_amount), 0) from credit_holds h where h.user_id = a.user_id and h.status = 'held')
      union all
      select 'captures without exactly one debit', count(*)::text from credit_holds h
        where h.status = 'captured'
        and (select count(*) from credit_transactions t
             where t.user_id = h.user_id and t.kind = 'hold_capture' and t.reference = h.broker_parent_order_id) <> 1
    `)
    const debits = (
      await checker.query<{ n: string }>(
        `select count(*)::text as n from credit_transactions where kind = 'hold_capture'`,
      )
    ).rows[0]?.n
    await checker.end()
    const failed = problems.rows.filter((row) => row.n !== '0')
    const consistent = failed.length === 0 && Number(debits) === cycles.captured

    const cpu = os.cpus()
    const line = (label: string, r: RunResult) =>
      `${label.padEnd(28)} ${(r.ops / r.seconds).toFixed(0).padStart(6)} req/s   p50 ${percentile(r.latencies, 50).toFixed(1)} ms   p99 ${percentile(r.latencies, 99).toFixed(1)} ms   errors ${r.errors}`
    console.log(
      `credits benchmark: ${USERS} users, ${CLIENTS} concurrent clients, PostgreSQL (pool of 10), one app instance`,
    )
    console.log(`machine: ${cpu.length} x ${cpu[0]?.model ?? 'unknown cpu'}, node ${process.version}`)
    console.log(line(`baseline GET /api/credits`, baseline))
    console.log(line(`create -> capture requests`, cycles))
    console.log(
      `create -> capture cycles     ${(cycles.captured / cycles.seconds).toFixed(0).padStart(6)} cycles/s (${cycles.captured} captured in ${cycles.seconds.toFixed(1)} s)`,
    )
    console.log(
      `ratio to baseline            ${(cycles.ops / cycles.seconds / (baseline.ops / baseline.seconds)).toFixed(2)}`,
    )
    console.log(
      consistent
        ? `ledger: consistent (${debits} hold_capture rows = ${cycles.captured} captures answered true)`
        : `ledger: INCONSISTENT ${JSON.stringify(failed)} debits=${debits} captures=${cycles.captured}`,
    )
    if (!consistent || cycles.errors > 0 || baseline.errors > 0) process.exitCode = 1
  } finally {
    await app.close()
    await onServer(`drop database if exists ${name} with (force)`)
  }
}

await main()
