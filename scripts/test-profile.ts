// `npm run test:profile [-- vitest arguments]`: runs the suite (as `npm test` does, on PGlite, or on
// PostgreSQL + Redis with TEST_DATABASE_URL and TEST_REDIS_URL set) and prints the 25 slowest files
// and where the time went. Per file: database setup is the wall time spent making its databases
// (test/helpers/setup-time.ts); work is the CPU time of the file's process outside that setup (at
// most the wall time left: compilers and PGlite run threads beside the tests); waiting is the rest
// of its wall time (timers, sleeps, polls, sockets, the servers it talks to, a busy other core).
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'

interface FileRecord {
  file: string
  wallMs: number
  cpuMs: number
  setupMs: number
  setupCpuMs: number
  databases: number
}

const dir = mkdtempSync(join(tmpdir(), 'trading-api-profile-'))
const report = join(dir, 'report.json')
const started = performance.now()
const run = spawnSync(
  'node_modules/.bin/vitest',
  ['run', '--reporter=dot', '--reporter=json', `--outputFile=${report}`, ...process.argv.slice(2)],
  { stdio: 'inherit', env: { ...process.env, TEST_PROFILE_DIR: dir } },
)
const elapsedMs = performance.now() - started

const records: FileRecord[] = readdirSync(dir)
  .filter((name) => name !== 'report.json' && name.endsWith('.json'))
  .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as FileRecord)
let tests = 0
try {
  tests = (JSON.parse(readFileSync(report, 'utf8')) as { numTotalTests: number }).numTotalTests
} catch {}
rmSync(dir, { recursive: true, force: true })

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const share = (ms: number, of: number) => `${((100 * ms) / Math.max(of, 1)).toFixed(0)}%`
const parts = (r: FileRecord) => {
  const outside = Math.max(0, r.wallMs - r.setupMs)
  const work = Math.min(outside, Math.max(0, r.cpuMs - r.setupCpuMs))
  return { setup: r.setupMs, work, waiting: outside - work }
}

const total = { wall: 0, setup: 0, work: 0, waiting: 0, databases: 0 }
for (const r of records) {
  const p = parts(r)
  total.wall += r.wallMs
  total.setup += p.setup
  total.work += p.work
  total.waiting += p.waiting
  total.databases += r.databases
}

console.log(
  `\n${records.length} files, ${tests} tests, ${seconds(elapsedMs)} elapsed (vitest exit ${run.status})`,
)
console.log(
  `file time ${seconds(total.wall)}: database setup ${seconds(total.setup)} (${share(total.setup, total.wall)}, ` +
    `${total.databases} databases), waiting ${seconds(total.waiting)} (${share(total.waiting, total.wall)}), ` +
    `work ${seconds(total.work)} (${share(total.work, total.wall)})`,
)
console.log('\nslowest files          wall    setup  waiting     work  databases')
for (const r of [...records].sort((a, b) => b.wallMs - a.wallMs).slice(0, 25)) {
  const p = parts(r)
  const cells = [r.wallMs, p.setup, p.waiting, p.work].map((ms) => seconds(ms).padStart(8)).join(' ')
  console.log(`${cells} ${String(r.databases).padStart(6)}  ${relative(process.cwd(), r.file)}`)
}
process.exitCode = run.status ?? 1
