import os from 'node:os'
import pg from 'pg'
import { Pool } from 'undici'
import type { Database } from '../src/db/client.ts'
import { systemClock } from '../src/lib/clock.ts'
import { createEventBus } from '../src/lib/events.ts'
import { holdStatementsSql } from '../src/modules/credits/holds/holds.repository.ts'
import { createLedgerService } from '../src/modules/credits/ledger.service.ts'
import { auditLedger } from '../src/modules/credits/ledger-audit.ts'
import { createUsersService } from '../src/modules/users/users.service.ts'
import {
  cpuBetween,
  cpuSnapshot,
  percentile,
  type RunResult,
  runClients,
  startBenchApp,
  timedCaller,
  writeBenchJson,
} from './harness.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'
import { createTargets } from './targets.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS ?? 5)
const USERS = 100
const CLIENTS = 32
const HOLDS_RATE_GOAL = 2000
const HOLDS_RAW_RATIO_GOAL = 0.75

interface Session {
  userId: number
  headers: Record<string, string>
}

/**
 * CPU ms per operation in this process (the app and its load) and in PostgreSQL (this database's
 * backends and the server's own processes such as the WAL writer, not other databases'), over one phase.
 */
interface CpuPerOp {
  nodeMs: number
  postgresMs: number
  /** Share of the machine's CPU time that was busy (any process). */
  machineBusy: number | null
}

async function measured<T extends RunResult>(
  database: string,
  run: () => Promise<T>,
): Promise<T & { cpu: CpuPerOp }> {
  const before = cpuSnapshot()
  const result = await run()
  const used = cpuBetween(before, cpuSnapshot(), {
    node: (pid) => pid === process.pid,
    // "postgres: 15/main: walwriter", or a backend "postgres: 15/main: user dbname 127.0.0.1(5678) idle".
    postgres: (_pid, command) =>
      command.startsWith('postgres: ') && (command.includes(` ${database} `) || !command.includes('(')),
  })
  const per = (ms = 0) => ms / Math.max(1, result.ops)
  return {
    ...result,
    cpu: {
      nodeMs: per(used.groups.node),
      postgresMs: per(used.groups.postgres),
      machineBusy: used.machine ? used.machine.busyMs / used.machine.totalMs : null,
    },
  }
}

/**
 * The same create -> capture cycles as the app's, as the very statements the app sends (same text,
 * name and values), on a bare pg pool of the app's size: the database's own limit for these
 * transactions, with no HTTP, sessions, validation or ORM around them.
 */
async function rawCycles(database: Database, url: string, databaseName: string, sessions: Session[]) {
  const statements = holdStatementsSql(database.db)
  const pool = new pg.Pool({ connectionString: url, max: database.poolSize })
  try {
    // Every connection open before the clock starts (and its server process counted in the CPU figures).
    await Promise.all(Array.from({ length: database.poolSize }, () => pool.query('select 1')))
    const timed = async (name: string, text: string, values: unknown[]) => {
      const t0 = performance.now()
      const { rows } = await pool.query({ name, text, values, rowMode: 'array' })
      return { rows, ms: performance.now() - t0 }
    }
    return await measured(databaseName, () =>
      runClients(CLIENTS, sessions, SECONDS, async ({ userId }, n, result) => {
        const orderId = `raw-${n}`
        const { place, capture } = statements
        const created = await timed(
          place.name,
          place.text,
          place.values({ userId, orderId, accountHash: null, amount: '1', now: new Date() }),
        )
        const captured = await timed(
          capture.name,
          capture.text,
          capture.values({ userId, orderId, now: new Date() }),
        )
        // A new hold has its id in the created columns (third on); a capture its settled row's (second on).
        if (created.rows[0]?.[2] == null || captured.rows[0]?.[1] == null) result.errors++
        else result.succeeded++
        return [created.ms, captured.ms]
      }),
    )
  } finally {
    await pool.end()
  }
}

async function main() {
  const bench = await startBenchApp('bench_credits')
  const { database, appUrl } = bench
  try {
    const http = new Pool(appUrl, { connections: CLIENTS, pipelining: 1 })

    const users = createUsersService({ db: database.db, clock: systemClock, events: createEventBus() })
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

    const databaseName = new URL(bench.databaseUrl).pathname.slice(1)
    const baseline = await measured(databaseName, () =>
      runClients(CLIENTS, sessions, BASELINE_SECONDS, async (session, _n, result) => {
        const res = await call('GET', '/api/credits', session)
        if (res.status !== 200) result.errors++
        return [res.ms]
      }),
    )

    const raw = await rawCycles(database, bench.databaseUrl, databaseName, sessions)

    const cycles = await measured(databaseName, () =>
      runClients(CLIENTS, sessions, SECONDS, async (session, n, result) => {
        const order = `bench-${n}`
        const created = await call('POST', '/api/credit-holds', session, { broker_parent_order_id: order })
        const captured = await call('POST', '/api/credit-holds/capture', session, {
          broker_parent_order_id: order,
        })
        if (created.status !== 201 || captured.status !== 200) result.errors++
        if (captured.text === '{"captured":true}') result.succeeded++
        return [created.ms, captured.ms]
      }),
    )
    await http.close()

    // The ledger after both storms: every check one SQL answer of 0 problems (the tests run the same).
    const audit = await auditLedger(database.db)
    const captures = cycles.succeeded + raw.succeeded
    const consistent = audit.failed.length === 0 && audit.holdCaptureDebits === captures

    const cpu = os.cpus()
    const rate = (r: RunResult) => r.ops / r.seconds
    const line = (label: string, r: RunResult & { cpu: CpuPerOp }, unit = 'req/s') =>
      `${label.padEnd(28)} ${rate(r).toFixed(0).padStart(6)} ${unit}   p50 ${percentile(r.latencies, 50).toFixed(1)} ms   p99 ${percentile(r.latencies, 99).toFixed(1)} ms   errors ${r.errors}   load ${r.load}\n${''.padEnd(28)} CPU per op: node ${r.cpu.nodeMs.toFixed(2)} ms, postgres ${r.cpu.postgresMs.toFixed(2)} ms; machine ${r.cpu.machineBusy === null ? '?' : (100 * r.cpu.machineBusy).toFixed(0)}% busy`
    console.log(
      `credits benchmark: ${USERS} users, ${CLIENTS} concurrent clients, PostgreSQL (pool of ${database.poolSize}), one app instance`,
    )
    console.log(`machine: ${cpu.length} x ${cpu[0]?.model ?? 'unknown cpu'}, node ${process.version}`)
    console.log(line(`baseline GET /api/credits`, baseline))
    console.log(line(`create -> capture requests`, cycles))
    console.log(
      `create -> capture cycles     ${(cycles.succeeded / cycles.seconds).toFixed(0).padStart(6)} cycles/s (${cycles.succeeded} captured in ${cycles.seconds.toFixed(1)} s)`,
    )
    console.log(`ratio to GET baseline        ${(rate(cycles) / rate(baseline)).toFixed(2)}`)
    console.log(line('raw pg, the same statements', raw, 'stmt/s'))
    console.log(
      `ratio app / raw pg           ${(rate(cycles) / rate(raw)).toFixed(2)}   (raw pg: the database's own limit for these transactions)`,
    )
    console.log(
      consistent
        ? `ledger: consistent (${audit.checks.length} checks; ${audit.holdCaptureDebits} hold_capture rows = ${cycles.succeeded} app + ${raw.succeeded} raw pg captures)`
        : `ledger: INCONSISTENT ${JSON.stringify(audit.failed)} debits=${audit.holdCaptureDebits} captures=${captures}`,
    )
    const targets = createTargets()
    targets.check('holds-requests-per-second', rate(cycles), '>=', HOLDS_RATE_GOAL, {
      unit: ' req/s',
      digits: 0,
    })
    targets.check('holds-app-over-raw-pg', rate(cycles) / rate(raw), '>=', HOLDS_RAW_RATIO_GOAL, {
      label: 'app / raw pg',
    })
    targets.check('holds-ledger-consistent', consistent ? 1 : 0, '>=', 1, {
      label: 'audit passed',
      digits: 0,
    })
    const figures = (r: RunResult & { cpu: CpuPerOp }) => ({
      rate: rate(r),
      p50: percentile(r.latencies, 50),
      p99: percentile(r.latencies, 99),
      errors: r.errors,
      load: r.load,
      cpuPerOp: r.cpu,
    })
    const json = writeBenchJson('credits', {
      users: USERS,
      clients: CLIENTS,
      baseline: figures(baseline),
      holdRequests: figures(cycles),
      cyclesPerSecond: cycles.succeeded / cycles.seconds,
      ratio: rate(cycles) / rate(baseline),
      rawPg: figures(raw),
      ratioToRawPg: rate(cycles) / rate(raw),
      poolSize: database.poolSize,
      ledgerConsistent: consistent,
      ledgerChecks: audit.checks,
      targets: targets.results,
    })
    if (json) console.log(`figures written to ${json}`)
    if (!consistent || cycles.errors > 0 || baseline.errors > 0 || raw.errors > 0) process.exitCode = 1
  } finally {
    await bench.close()
  }
}

await main()
