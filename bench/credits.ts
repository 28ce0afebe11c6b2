import os from 'node:os'
import pg from 'pg'
import { Pool } from 'undici'
import { systemClock } from '../src/lib/clock.ts'
import { createLedgerService } from '../src/modules/credits/ledger.service.ts'
import { createUsersService } from '../src/modules/users/users.service.ts'
import {
  percentile,
  type RunResult,
  runClients,
  startBenchApp,
  timedCaller,
  writeBenchJson,
} from './harness.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS ?? 5)
const USERS = 100
const CLIENTS = 32

interface Session {
  userId: number
  headers: Record<string, string>
}

async function main() {
  const bench = await startBenchApp('bench_credits')
  const { database, appUrl } = bench
  try {
    const http = new Pool(appUrl, { connections: CLIENTS, pipelining: 1 })

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

    const call = timedCaller(http)

    const baseline = await runClients(CLIENTS, sessions, BASELINE_SECONDS, async (session, _n, result) => {
      const res = await call('GET', '/api/credits', session)
      if (res.status !== 200) result.errors++
      return [res.ms]
    })

    const cycles = await runClients(CLIENTS, sessions, SECONDS, async (session, n, result) => {
      const order = `bench-${n}`
      const created = await call('POST', '/api/credit-holds', session, { broker_parent_order_id: order })
      const captured = await call('POST', '/api/credit-holds/capture', session, {
        broker_parent_order_id: order,
      })
      if (created.status !== 201 || captured.status !== 200) result.errors++
      if (captured.text === '{"captured":true}') result.succeeded++
      return [created.ms, captured.ms]
    })
    await http.close()

    // The ledger after the storm: every check is one SQL answer of 0 problems.
    const checker = new pg.Client({ connectionString: bench.databaseUrl })
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
    const consistent = failed.length === 0 && Number(debits) === cycles.succeeded

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
      `create -> capture cycles     ${(cycles.succeeded / cycles.seconds).toFixed(0).padStart(6)} cycles/s (${cycles.succeeded} captured in ${cycles.seconds.toFixed(1)} s)`,
    )
    console.log(
      `ratio to baseline            ${(cycles.ops / cycles.seconds / (baseline.ops / baseline.seconds)).toFixed(2)}`,
    )
    console.log(
      consistent
        ? `ledger: consistent (${debits} hold_capture rows = ${cycles.succeeded} captures answered true)`
        : `ledger: INCONSISTENT ${JSON.stringify(failed)} debits=${debits} captures=${cycles.succeeded}`,
    )
    const figures = (r: RunResult) => ({
      rate: r.ops / r.seconds,
      p50: percentile(r.latencies, 50),
      p99: percentile(r.latencies, 99),
      errors: r.errors,
      load: r.load,
    })
    const json = writeBenchJson('credits', {
      users: USERS,
      clients: CLIENTS,
      baseline: figures(baseline),
      holdRequests: figures(cycles),
      cyclesPerSecond: cycles.succeeded / cycles.seconds,
      ratio: cycles.ops / cycles.seconds / (baseline.ops / baseline.seconds),
      ledgerConsistent: consistent,
    })
    if (json) console.log(`figures written to ${json}`)
    if (!consistent || cycles.errors > 0 || baseline.errors > 0) process.exitCode = 1
  } finally {
    await bench.close()
  }
}

await main()
