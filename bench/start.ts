/**
 * `npm run bench:start`: how long the real server process takes to be ready, and what it holds in
 * memory when idle, on PGlite and on PostgreSQL.
 *
 * Each start spawns `node src/server.ts` with a production environment (NODE_ENV=production, the
 * default log level, an upstream nobody calls at start) and polls `GET /up` every POLL_MS (5 ms):
 * "ready" is the time from spawn to its first 200. Then, idle for IDLE_MS (2 s), the process's
 * resident memory (VmRSS in /proc/<pid>/status); then again after a few requests (health, CSRF
 * cookie, a 401, the OpenAPI document). Each start ends with SIGTERM, and must exit 0.
 *
 *   PGlite:     the first start on an empty DATA_DIR (initdb, migrations, knowledge base sync) and
 *               an empty compile cache, then BENCH_START_RUNS (5) later starts on both (median).
 *   PostgreSQL: the same on a throwaway database of BENCH_DATABASE_URL's server
 *               (default postgres://postgres@127.0.0.1:5432/postgres), dropped at the end.
 *   baseline:   a bare `node -e` http server answering 200, started and measured the same way.
 *
 * Printed: a table, and the ratios to bare Node; BENCH_JSON=path writes the figures there.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { createServer } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { generateAppKey } from '../src/config.ts'
import { load1, median, onServer, processCpuMs, SERVER_URL, writeBenchJson } from './harness.ts'

const RUNS = Number(process.env.BENCH_START_RUNS ?? 5)
const POLL_MS = 5
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 2000)
const READY_TIMEOUT_MS = 60_000
const projectRoot = join(import.meta.dirname, '..')

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A loopback port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/** One GET on a fresh connection: its status, or null when nothing answers (yet). */
function get(port: number, path: string): Promise<number | null> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 1000 }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? null))
      res.on('error', () => resolve(null))
    })
    req.on('error', () => resolve(null))
    req.on('timeout', () => req.destroy())
    req.end()
  })
}

/** From /proc/<pid>/status, in MB: resident now and at its peak. */
function memory(pid: number): { rssMb: number; peakRssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? 0)
  return { rssMb: kb('VmRSS') / 1024, peakRssMb: kb('VmHWM') / 1024 }
}

/** CPU time (user + system, every thread) the process has used so far, in ms. */
function cpuMs(pid: number): number {
  const ms = processCpuMs(pid)
  if (ms === null) throw new Error(`no CPU time in /proc/${pid}/stat`)
  return ms
}

interface Start {
  readyMs: number
  /** CPU the process used until ready (less sensitive than wall time to a busy machine). */
  cpuMs: number
  idle: { rssMb: number; peakRssMb: number }
  warm: { rssMb: number; peakRssMb: number }
  stopMs: number
}

/** Paths a few warm-up requests take (answers 2xx or 401; only the status of /up is checked). */
const WARM_PATHS = ['/up', '/guard/csrf-cookie', '/api/user', '/api/knowledge-base', '/api/openapi.json']

/** Spawns `args` with `env`, waits until GET /up answers 200, measures, then stops it with SIGTERM. */
async function measureStart(args: string[], env: Record<string, string>, port: number): Promise<Start> {
  const started = performance.now()
  const child = spawn(process.execPath, args, {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let exited: number | null | undefined
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = code ?? (signal ? -1 : null)
      resolve(exited)
    }),
  )
  const fail = (why: string) => new Error(`${args.join(' ')}: ${why}\n--- its last output:\n${output}`)
  try {
    const pid = child.pid
    if (pid === undefined) throw fail('did not start')
    for (;;) {
      if (exited !== undefined) throw fail(`exited with ${exited} before it was ready`)
      if ((await get(port, '/up')) === 200) break
      if (performance.now() - started > READY_TIMEOUT_MS) throw fail('not ready within 60 s')
      await sleep(POLL_MS)
    }
    const readyMs = performance.now() - started
    const cpu = cpuMs(pid)
    await sleep(IDLE_MS)
    const idle = memory(pid)
    for (let round = 0; round < 10; round++) {
      for (const path of WARM_PATHS) await get(port, path)
    }
    await sleep(IDLE_MS)
    const warm = memory(pid)
    const stopping = performance.now()
    child.kill('SIGTERM')
    const code = await exit
    if (code !== 0) throw fail(`SIGTERM: exited with ${code}, not 0`)
    return { readyMs, cpuMs: cpu, idle, warm, stopMs: performance.now() - stopping }
  } finally {
    if (exited === undefined) {
      child.kill('SIGKILL')
      await exit
    }
  }
}

/** The median of each figure over several starts. */
function medianOf(starts: Start[]): Start {
  const m = (pick: (s: Start) => number) => median(starts.map(pick))
  return {
    readyMs: m((s) => s.readyMs),
    cpuMs: m((s) => s.cpuMs),
    idle: { rssMb: m((s) => s.idle.rssMb), peakRssMb: m((s) => s.idle.peakRssMb) },
    warm: { rssMb: m((s) => s.warm.rssMb), peakRssMb: m((s) => s.warm.peakRssMb) },
    stopMs: m((s) => s.stopMs),
  }
}

/** The app's production environment on `dataDir` (and `databaseUrl` when given). */
function appEnv(dataDir: string, databaseUrl?: string): Record<string, string> {
  return {
    NODE_ENV: 'production',
    APP_KEY: generateAppKey(),
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    // Nothing is called at start; a port nobody listens on.
    UPSTREAM_BASE_URL: 'http://127.0.0.1:9',
    UPSTREAM_API_TOKEN: 'bench-upstream-token',
    REVERB_APP_ID: 'bench',
    REVERB_APP_KEY: 'bench-key',
    REVERB_APP_SECRET: randomBytes(20).toString('hex'),
    // The stop measured is the app's own; its grace period for a balancer is a set wait.
    SHUTDOWN_GRACE_MS: '0',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  }
}

/**
 * A first start on a fresh store, then RUNS later starts on it. Each series has a compile cache of
 * its own (server.ts enables Node's; empty here, as on a new machine), so the first start is cold.
 */
async function series(appEnvironment: Record<string, string>) {
  const compileCache = mkdtempSync(join(os.tmpdir(), 'bench-start-cache-'))
  const env = { ...appEnvironment, NODE_COMPILE_CACHE: compileCache }
  try {
    const port = await freePort()
    const first = await measureStart(['src/server.ts'], env, port)
    const later: Start[] = []
    for (let i = 0; i < RUNS; i++) later.push(await measureStart(['src/server.ts'], env, port))
    return { first, later: medianOf(later), laterReadyMs: later.map((s) => Math.round(s.readyMs)) }
  } finally {
    rmSync(compileCache, { recursive: true, force: true })
  }
}

// Exits 0 on SIGTERM, as the app does.
const BARE = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1'); process.on('SIGTERM', () => process.exit(0))`

console.log(
  `machine: ${os.availableParallelism()} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, node ${process.version}; ${RUNS} later starts each, idle ${IDLE_MS} ms\n`,
)

const bareStarts: Start[] = []
const barePort = await freePort()
for (let i = 0; i < RUNS; i++) bareStarts.push(await measureStart(['-e', BARE], {}, barePort))
const bare = medianOf(bareStarts)

const pgliteDir = mkdtempSync(join(os.tmpdir(), 'bench-start-'))
let pglite: Awaited<ReturnType<typeof series>>
try {
  pglite = await series(appEnv(pgliteDir))
} finally {
  rmSync(pgliteDir, { recursive: true, force: true })
}

let postgres: Awaited<ReturnType<typeof series>> | null = null
let postgresSkipped: string | undefined
const dbName = `bench_start_${randomBytes(4).toString('hex')}`
try {
  await onServer(`create database ${dbName}`)
} catch (error) {
  postgresSkipped = `no PostgreSQL at ${SERVER_URL}: ${(error as Error).message}`
}
if (!postgresSkipped) {
  const url = new URL(SERVER_URL)
  url.pathname = `/${dbName}`
  const dataDir = mkdtempSync(join(os.tmpdir(), 'bench-start-pg-'))
  try {
    postgres = await series(appEnv(dataDir, url.toString()))
  } finally {
    await onServer(`drop database if exists ${dbName} with (force)`)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

const ms = (n: number) => `${n.toFixed(0)} ms`.padStart(8)
const mb = (n: number) => `${n.toFixed(0)} MB`.padStart(7)
const row = (name: string, s: Start) =>
  `${name.padEnd(34)} ${ms(s.readyMs)} ${ms(s.cpuMs)} ${mb(s.idle.rssMb)} ${mb(s.warm.rssMb)} ${mb(s.warm.peakRssMb)} ${ms(s.stopMs)}`
console.log(
  `${''.padEnd(34)} ${'ready'.padStart(8)} ${'cpu'.padStart(8)} ${'idle'.padStart(7)} ${'warm'.padStart(7)} ${'peak'.padStart(7)} ${'stop'.padStart(8)}`,
)
console.log(row('bare node:http (median)', bare))
console.log(row('PGlite, first start', pglite.first))
console.log(row('PGlite, later start (median)', pglite.later))
if (postgres) {
  console.log(row('PostgreSQL, first start', postgres.first))
  console.log(row('PostgreSQL, later start (median)', postgres.later))
} else console.log(`PostgreSQL skipped: ${postgresSkipped}`)
console.log(
  '\nready: spawn to the first 200 from GET /up; cpu: the process CPU until then; idle: VmRSS after ' +
    `${IDLE_MS} ms; warm: VmRSS after a few requests; peak: VmHWM; stop: SIGTERM to exit 0`,
)
const ratios = (name: string, s: Start) =>
  console.log(
    `${name}: ready ${(s.readyMs / bare.readyMs).toFixed(1)}× bare Node, idle RSS ${(s.idle.rssMb / bare.idle.rssMb).toFixed(1)}×`,
  )
ratios('PGlite later start', pglite.later)
if (postgres) ratios('PostgreSQL later start', postgres.later)
console.log(`later starts (ms): PGlite ${pglite.laterReadyMs.join(', ')}`)
if (postgres) console.log(`later starts (ms): PostgreSQL ${postgres.laterReadyMs.join(', ')}`)
console.log(`load average now: ${load1()}`)

const json = writeBenchJson('start', {
  runs: RUNS,
  idleMs: IDLE_MS,
  bare,
  pglite,
  postgres,
  ...(postgresSkipped ? { postgresSkipped } : {}),
  ratios: {
    pgliteLaterReady: pglite.later.readyMs / bare.readyMs,
    pgliteIdleRss: pglite.later.idle.rssMb / bare.idle.rssMb,
    ...(postgres
      ? {
          postgresLaterReady: postgres.later.readyMs / bare.readyMs,
          postgresIdleRss: postgres.later.idle.rssMb / bare.idle.rssMb,
        }
      : {}),
  },
})
if (json) console.log(`figures written to ${json}`)
