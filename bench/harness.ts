import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import type { Pool } from 'undici'
import { buildApp } from '../src/app.ts'
import { type Config, generateAppKey, loadConfig } from '../src/config.ts'
import { type Database, openDatabase } from '../src/db/client.ts'

/** What the database benchmarks share: a throwaway database, the app on it, timed client loops. */

export const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/** Runs one statement on BENCH_DATABASE_URL's server (create or drop a throwaway database). */
export async function onServer(statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: SERVER_URL })
  await admin.connect()
  try {
    await admin.query(statement)
  } finally {
    await admin.end()
  }
}

export interface BenchApp {
  app: FastifyInstance
  /** What the app was built with (the real-time key, for one). */
  config: Config
  database: Database
  /** The throwaway database's connection URL. */
  databaseUrl: string
  /** Where the app listens (loopback). */
  appUrl: string
  /** Closes the app and drops the database and the data folder. */
  close(): Promise<void>
}

/**
 * The app on a fresh database `{prefix}_<hex>` of BENCH_DATABASE_URL's server, listening on loopback;
 * `env` adds to (or overrides) the environment it is configured with (AI_BASE_URL, for one).
 */
export async function startBenchApp(prefix: string, env: Record<string, string> = {}): Promise<BenchApp> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  await onServer(`create database ${name}`)
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  const databaseUrl = url.toString()
  const dataDir = mkdtempSync(join(os.tmpdir(), `${prefix}-`))
  const close = async () => {
    await onServer(`drop database if exists ${name} with (force)`)
    rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    const config = loadConfig(
      {
        NODE_ENV: 'test',
        APP_KEY: generateAppKey(),
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        DATABASE_URL: databaseUrl,
        // The pool size the app would get from its environment (default 10).
        ...(process.env.DATABASE_POOL_SIZE ? { DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE } : {}),
        ...env,
      },
      dataDir,
    )
    const database = await openDatabase({ url: databaseUrl, poolSize: config.databasePoolSize })
    const app = await buildApp(config, { database })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const address = app.server.address()
    if (!address || typeof address === 'string') throw new Error('no port')
    return {
      app,
      config,
      database,
      databaseUrl,
      appUrl: `http://127.0.0.1:${address.port}`,
      close: async () => {
        await app.close()
        await close()
      },
    }
  } catch (error) {
    await close()
    throw error
  }
}

export const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? 0
    : (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0)

/** The 1-minute load average, as printed next to each figure. */
export const load1 = () => os.loadavg()[0]?.toFixed(2) ?? '?'

/** What a figure was measured on: cores, CPU model, node, and the load averages now. */
export const machine = () => ({
  cores: os.availableParallelism(),
  cpu: os.cpus()[0]?.model ?? 'unknown',
  node: process.version,
  loadAverage: os.loadavg().map((l) => Number(l.toFixed(2))),
})

/** Linux's USER_HZ: /proc counts CPU time in hundredths of a second. */
const TICK_MS = 10

/** CPU time so far (ms): the whole machine's (every core) and each process's, with its command line. */
export interface CpuSnapshot {
  at: number
  /** From /proc/stat; null where there is none (not Linux). */
  machine: { busyMs: number; totalMs: number } | null
  processes: Map<number, { ms: number; command: string }>
}

const readOr = (path: string, fallback: string) => {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return fallback
  }
}

export function cpuSnapshot(): CpuSnapshot {
  const at = performance.now()
  const fields = readOr('/proc/stat', '').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? []
  const machine =
    fields.length >= 5
      ? {
          totalMs: fields.reduce((a, b) => a + b, 0) * TICK_MS,
          busyMs: (fields.reduce((a, b) => a + b, 0) - (fields[3] ?? 0) - (fields[4] ?? 0)) * TICK_MS, // less idle, iowait
        }
      : null
  const processes = new Map<number, { ms: number; command: string }>()
  let pids: string[] = []
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {}
  for (const pid of pids) {
    const ms = statCpuMs(`/proc/${pid}/stat`)
    if (ms === null) continue
    const command = readOr(`/proc/${pid}/cmdline`, '').replaceAll('\0', ' ').trim()
    processes.set(Number(pid), { ms, command })
  }
  return { at, machine, processes }
}

/** User + system CPU time (ms) in a /proc `stat` file (a process's or a thread's), or null where there is none. */
function statCpuMs(path: string): number | null {
  const stat = readOr(path, '')
  // After "pid (comm) ": state is field 3, utime and stime fields 14 and 15.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const ms = (Number(rest[11]) + Number(rest[12])) * TICK_MS
  return stat && Number.isFinite(ms) ? ms : null
}

/** The CPU time (ms, user + system, all threads) process `pid` has used so far, or null where /proc has none. */
export const processCpuMs = (pid: number) => statCpuMs(`/proc/${pid}/stat`)

/** This process's main thread's CPU time so far (ms; its JavaScript, not GC helpers or libuv's pool), or null. */
export const mainThreadCpuMs = () => statCpuMs(`/proc/self/task/${process.pid}/stat`)

/**
 * Where the machine's CPU went between two snapshots: ms for each group (a process counts in the
 * first whose test it passes; one that started in between counts whole), and `other`, the rest of
 * the machine's busy time (other processes, the kernel, processes that ended in between).
 */
export function cpuBetween(
  before: CpuSnapshot,
  after: CpuSnapshot,
  groups: Record<string, (pid: number, command: string) => boolean>,
) {
  const ms: Record<string, number> = Object.fromEntries(Object.keys(groups).map((name) => [name, 0]))
  for (const [pid, now] of after.processes) {
    const used = now.ms - (before.processes.get(pid)?.ms ?? 0)
    const group = Object.entries(groups).find(([, test]) => test(pid, now.command))?.[0]
    if (group) ms[group] = (ms[group] ?? 0) + used
  }
  const machine =
    after.machine && before.machine
      ? {
          busyMs: after.machine.busyMs - before.machine.busyMs,
          totalMs: after.machine.totalMs - before.machine.totalMs,
        }
      : null
  const grouped = Object.values(ms).reduce((a, b) => a + b, 0)
  return {
    wallMs: after.at - before.at,
    groups: ms,
    machine,
    other: machine ? Math.max(0, machine.busyMs - grouped) : null,
  }
}

/** The middle value (the mean of the middle two for an even count): what a noisy machine's runs agree on. */
export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

/**
 * With BENCH_JSON=path set, writes `figures` there as JSON (with the benchmark's name, the time and the
 * machine) and answers the path; otherwise does nothing.
 */
export function writeBenchJson(bench: string, figures: object): string | undefined {
  const path = process.env.BENCH_JSON
  if (!path) return undefined
  const document = { bench, at: new Date().toISOString(), machine: machine(), figures }
  writeFileSync(path, `${JSON.stringify(document, null, 2)}\n`)
  return path
}

export interface RunResult {
  ops: number
  errors: number
  seconds: number
  latencies: number[]
  /** What a step counts as done (captured holds, stored messages). */
  succeeded: number
  statuses: Map<number, number>
  /** The load average when the run ended. */
  load: string
}

/**
 * `clients` loops for `seconds`, each calling `step` with the next session in turn and awaiting
 * every answer (so what a run counts is exact); `step` answers the timings of its requests.
 */
export async function runClients<S>(
  clients: number,
  sessions: S[],
  seconds: number,
  step: (session: S, n: number, result: RunResult) => Promise<number[]>,
): Promise<RunResult> {
  const result: RunResult = {
    ops: 0,
    errors: 0,
    seconds,
    latencies: [],
    succeeded: 0,
    statuses: new Map(),
    load: '',
  }
  const started = performance.now()
  const deadline = started + seconds * 1000
  let counter = 0
  await Promise.all(
    Array.from({ length: clients }, async (_, worker) => {
      for (let i = worker; performance.now() < deadline; i += clients) {
        const session = sessions[i % sessions.length] as S
        const timings = await step(session, counter++, result)
        result.latencies.push(...timings)
        result.ops += timings.length
      }
    }),
  )
  result.seconds = (performance.now() - started) / 1000
  result.latencies.sort((a, b) => a - b)
  result.load = load1()
  return result
}

/** One timed request through the benchmark's pool: its status, body and milliseconds. */
export function timedCaller(http: Pool) {
  return async (
    method: 'GET' | 'POST',
    path: string,
    session: { headers: Record<string, string> },
    body?: unknown,
  ) => {
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
}

/**
 * Pins every thread of process `pid` to CPU `core` (Linux `taskset`), so a server and the load
 * generator measuring it do not take turns on the same cores. Answers false where it cannot
 * (one core, no taskset, BENCH_PIN=0): the run then goes on unpinned and says so.
 */
export function pinToCore(pid: number, core: number): boolean {
  if (process.env.BENCH_PIN === '0' || os.availableParallelism() <= core) return false
  const run = spawnSync('taskset', ['--all-tasks', '--cpu-list', '--pid', String(core), String(pid)], {
    stdio: 'ignore',
  })
  return run.status === 0
}
