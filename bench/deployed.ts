/**
 * `npm run bench:deployed`: the signed-in reads through the deployment the recipe describes (deploy/),
 * against bare `node:http` servers behind the same nginx (issue 28, target 2).
 *
 * The stack is the system test's (test/system/stack.ts): a throwaway database on BENCH_DATABASE_URL's
 * PostgreSQL (default postgres://postgres@127.0.0.1:5432/postgres) migrated by the release step,
 * BENCH_REDIS_URL's Redis (default redis://127.0.0.1:6379, keys under a prefix of this run's own,
 * deleted at the end), a local simulated upstream (the fake upstream, answering as the simulator),
 * two instances (`node src/server.ts`, NODE_ENV=production, the recipe's environment: TRUSTED_PROXIES
 * naming nginx, REDIS_URL, LOG_LEVEL=info, their access lines to /dev/null) and nginx rendered from
 * deploy/nginx/trading-api.conf.template in front of them. Beside it, the baseline: two bare
 * `node:http` processes (bench/bare-server.ts) in the instances' place, behind a second nginx rendered
 * from the same template by the same code, answering the very bytes the app answers. Measured, each
 * through its nginx, with the same request (a signed-in session's cookies, `accept: application/json`):
 *   (a) the bare servers and (b) the app, `GET /api/markets` on a warm cache (the read bench:proxy
 *       measures on one instance; here each read's count is a Redis round trip and its answer the
 *       instance's near copy of the Redis entry, as on every instance of a multi-instance deployment);
 *   (c) the bare servers and (d) the app, `GET /api/user`.
 * Each at BENCH_CONNECTIONS (64) connections, after a one-second warm-up each, in BENCH_ROUNDS (5)
 * rounds of BENCH_SECONDS (3) s per run, the order reversed every other round (a b c d, d c b a, ...);
 * the figures printed are the medians over the rounds, a ratio the median of the rounds' own. The
 * per-user read limit (PROXY_READS_PER_MINUTE) is counted as always, set above what the run sends.
 * The servers' side (both nginx, their workers, the instances and the bare servers) is pinned to
 * CPU 0 and the load generator (autocannon, this process) to CPU 1 (`taskset`; BENCH_PIN=0: no
 * pinning), so a ratio compares what the two sides cost, not what the load generator left them.
 * PostgreSQL and Redis are the shared servers, not pinned. Printed: request rates, p50/p99, nginx's
 * and the Node processes' CPU per request, the targets b/a and d/c (>= 0.6, of the rates), and the
 * same comparison in CPU per request (bare/app): steadier than the rates on a shared machine, and
 * what the rates' ratio comes to when the servers' core, not the load generator, is the limit. Any
 * answer but a 2xx, or a connection error, makes the exit code 1. BENCH_JSON=path writes the figures.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { Pool, request } from 'undici'
import { freePort } from '../test/helpers/ports.ts'
import { type RunningNginx, startNginx } from '../test/system/nginx.ts'
import { runCli } from '../test/system/processes.ts'
import { type Stack, startStack } from '../test/system/stack.ts'
import type { BareServer } from './bare-server.ts'
import { forkFleet } from './child-fleet.ts'
import { machine, median, pinToCore, processCpuMs, SERVER_URL, writeBenchJson } from './harness.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'
import { createTargets } from './targets.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5))
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SERVER_CORE = 0
const LOAD_CORE = 1
const GOAL = 0.6

/** The processes whose parent is `pid` (nginx's workers), from /proc. */
function childrenOf(pid: number): number[] {
  const children: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat = ''
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8')
    } catch {
      continue
    }
    // After "pid (comm) ": state, then the parent's pid.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    if (parent === pid) children.push(Number(name))
  }
  return children
}

/** One side of the comparison: the nginx in front, and the Node processes behind it. */
interface Side {
  url: string
  nginx: number[]
  node: number[]
}

const sideOf = (nginx: RunningNginx, node: number[]): Side => ({
  url: nginx.url,
  nginx: [nginx.pid, ...childrenOf(nginx.pid)],
  node,
})

const cpuMs = (pids: number[]) => pids.reduce((sum, pid) => sum + (processCpuMs(pid) ?? Number.NaN), 0)

interface Figures {
  rate: number
  /** nginx's CPU time (master and workers) per answered request (µs); NaN where /proc has none. */
  nginxMicros: number
  /** The Node processes' CPU time (both instances, or both bare servers) per answered request (µs). */
  nodeMicros: number
  p50: number
  p99: number
  non2xx: number
  errors: number
}

async function load(side: Side, path: string, headers: Record<string, string>, seconds = SECONDS) {
  const nginxBefore = cpuMs(side.nginx)
  const nodeBefore = cpuMs(side.node)
  const result = await autocannon({
    url: `${side.url}${path}`,
    headers,
    connections: CONNECTIONS,
    duration: seconds,
  })
  const answered = Math.max(1, result.requests.total)
  const micros = (ms: number) => Math.round((ms * 10_000) / answered) / 10
  return {
    rate: result.requests.average,
    nginxMicros: micros(cpuMs(side.nginx) - nginxBefore),
    nodeMicros: micros(cpuMs(side.node) - nodeBefore),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  } satisfies Figures
}

/** The answer's bytes, checked: 200 (and, for a cached read, a hit) on every try, the same bytes each time. */
async function answerOf(url: string, headers: Record<string, string>, tries: number, cached: boolean) {
  let bytes: Buffer | undefined
  for (let i = 0; i < tries; i++) {
    const res = await request(url, { headers })
    const body = Buffer.from(await res.body.arrayBuffer())
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${body}`)
    if (cached && res.headers['x-cache'] !== 'HIT')
      throw new Error(`${url} was not a cache hit (${res.headers['x-cache']})`)
    if (bytes && !bytes.equals(body)) throw new Error(`${url} answered other bytes on another try`)
    bytes = body
  }
  return bytes as Buffer
}

async function main() {
  const targets = createTargets()
  // Taken before the pinning: a process pinned to one core sees one core.
  const { cores, cpu, node, loadAverage } = machine()
  const scratch = mkdtempSync(join(os.tmpdir(), 'bench-deployed-'))
  const cleanups: Array<() => unknown> = [() => rmSync(scratch, { recursive: true, force: true })]
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => {})
  }
  // Stopped by a signal, it still stops what it started (nginx, the instances) and drops its database.
  const onSignal = () => void cleanup().finally(() => process.exit(130))
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    const stack: Stack = await startStack({
      viaPgBouncer: false,
      databaseServerUrl: SERVER_URL,
      redisUrl: REDIS_URL,
      redisPrefix: `bench-deployed-${randomBytes(4).toString('hex')}:`,
      instanceStdout: 'ignore',
      env: {
        // Long enough that the warm entry stays warm for the whole run.
        CACHE_TTL_SECONDS: '3600',
        // One session sends every request: its per-user read limit is counted, as always, but set
        // above what the run sends, so the figures include what the limit costs and no 429.
        PROXY_READS_PER_MINUTE: '9999999',
      },
    })
    cleanups.push(() => stack.stop())

    // A verified user made by the CLI, as the release step makes the admin; signed in through nginx.
    const email = `bench-${randomBytes(4).toString('hex')}@example.com`
    const created = await runCli(
      ['users:create', '--name', 'Bench', '--email', email, '--password', BENCH_PASSWORD, '--verified'],
      stack.env,
      scratch,
    )
    if (created.code !== 0) throw new Error(`users:create failed:\n${created.stderr}`)
    const http = new Pool(stack.nginx.url, { connections: 1 })
    const { cookie } = await signIn(http, email).finally(() => http.close())
    const headers = { cookie, accept: 'application/json' }

    // Warm the entry (its miss), then its hits on both instances (nginx alternates), and take the bytes.
    await answerOf(`${stack.nginx.url}/api/markets`, headers, 1, false)
    const markets = await answerOf(`${stack.nginx.url}/api/markets`, headers, 4, true)
    const user = await answerOf(`${stack.nginx.url}/api/user`, headers, 4, false)

    const answers = {
      '/api/markets': markets.toString('base64'),
      '/api/user': user.toString('base64'),
    }
    const bareFile = fileURLToPath(new URL('./bare-server.ts', import.meta.url))
    const bares = [0, 1].map(() => forkFleet<BareServer>(bareFile, ['start', 'close']))
    cleanups.push(async () => {
      for (const bare of bares) {
        await bare.close().catch(() => {})
        bare.stop()
      }
    })
    const barePorts = await Promise.all(
      bares.map(async (bare) => {
        const port = await freePort()
        await bare.start(port, answers)
        return `127.0.0.1:${port}`
      }),
    )
    const bareNginx = await startNginx({
      dir: join(scratch, 'nginx-bare'),
      port: await freePort(),
      instances: [barePorts[0] as string, barePorts[1] as string],
    })
    cleanups.push(() => bareNginx.stop())

    const app = sideOf(
      stack.nginx,
      stack.instances.map((instance) => instance.pid() ?? 0),
    )
    const bare = sideOf(
      bareNginx,
      bares.map((fleet) => fleet.pid),
    )
    const serverPids = [...app.nginx, ...app.node, ...bare.nginx, ...bare.node]
    const pinned =
      serverPids.map((pid) => pinToCore(pid, SERVER_CORE)).every(Boolean) && pinToCore(process.pid, LOAD_CORE)

    console.log(`machine: ${cores} × ${cpu}, load average ${loadAverage.join(' ')}, node ${node}`)
    console.log(
      pinned
        ? `nginx, instances and bare servers pinned to CPU ${SERVER_CORE}, load generator to CPU ${LOAD_CORE}`
        : 'not pinned: servers and load generator share the cores',
    )
    console.log(
      `answers: GET /api/markets ${markets.length} bytes, GET /api/user ${user.length} bytes; ${CONNECTIONS} connections, ${SECONDS} s each, ${ROUNDS} rounds\n`,
    )

    const runs = [
      { name: 'a', side: bare, path: '/api/markets', what: '(a) bare node:http ×2, markets bytes' },
      { name: 'b', side: app, path: '/api/markets', what: '(b) app ×2, GET /api/markets (warm)' },
      { name: 'c', side: bare, path: '/api/user', what: '(c) bare node:http ×2, user bytes' },
      { name: 'd', side: app, path: '/api/user', what: '(d) app ×2, GET /api/user' },
    ] as const
    type Round = Record<(typeof runs)[number]['name'], Figures>
    let failures = 0
    for (const run of runs) {
      const warm = await load(run.side, run.path, headers, 1)
      failures += warm.non2xx + warm.errors
    }
    const rounds: Round[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const figures: Partial<Round> = {}
      for (const run of round % 2 ? [...runs].reverse() : runs) {
        figures[run.name] = await load(run.side, run.path, headers)
      }
      const { a, b, c, d } = figures as Round
      rounds.push({ a, b, c, d })
      console.log(
        `round ${round + 1}: markets a ${a.rate.toFixed(0)}, b ${b.rate.toFixed(0)} req/s, b/a ${(b.rate / a.rate).toFixed(2)}; user c ${c.rate.toFixed(0)}, d ${d.rate.toFixed(0)} req/s, d/c ${(d.rate / c.rate).toFixed(2)}`,
      )
    }
    const middle = (name: keyof Round): Figures => {
      const all = rounds.map((round) => round[name])
      return {
        rate: median(all.map((run) => run.rate)),
        nginxMicros: median(all.map((run) => run.nginxMicros)),
        nodeMicros: median(all.map((run) => run.nodeMicros)),
        p50: median(all.map((run) => run.p50)),
        p99: median(all.map((run) => run.p99)),
        non2xx: all.reduce((sum, run) => sum + run.non2xx, 0),
        errors: all.reduce((sum, run) => sum + run.errors, 0),
      }
    }
    const ratio = (top: keyof Round, bottom: keyof Round) =>
      median(rounds.map((round) => round[top].rate / round[bottom].rate))
    // What a request costs the servers' side (nginx and Node), bare over app: steadier than the rates
    // on a shared machine, and what the rates' ratio comes to when that side is the bottleneck.
    const cpuRatio = (bare: keyof Round, app: keyof Round) =>
      median(
        rounds.map(
          (round) =>
            (round[bare].nginxMicros + round[bare].nodeMicros) /
            (round[app].nginxMicros + round[app].nodeMicros),
        ),
      )
    const figures = Object.fromEntries(runs.map((run) => [run.name, middle(run.name)])) as Round
    failures += Object.values(figures).reduce((sum, run) => sum + run.non2xx + run.errors, 0)

    const row = (what: string, f: Figures) =>
      `${what.padEnd(38)} ${f.rate.toFixed(0).padStart(7)} req/s   p50 ${String(f.p50).padStart(3)} ms   p99 ${String(f.p99).padStart(3)} ms   CPU nginx ${f.nginxMicros} + node ${f.nodeMicros} µs/request   non-2xx ${f.non2xx}, errors ${f.errors}`
    console.log(`\nmedians over ${ROUNDS} rounds, each through its nginx:`)
    for (const run of runs) console.log(row(run.what, figures[run.name]))
    console.log('')
    const marketsRatio = ratio('b', 'a')
    const userRatio = ratio('d', 'c')
    targets.check('deployed-markets-through-nginx', marketsRatio, '>=', GOAL, { label: 'b/a' })
    targets.check('deployed-user-through-nginx', userRatio, '>=', GOAL, { label: 'd/c' })
    console.log(
      `p99: markets ${figures.b.p99} ms (bare ${figures.a.p99} ms), user ${figures.d.p99} ms (bare ${figures.c.p99} ms)`,
    )
    const marketsCpu = cpuRatio('a', 'b')
    const userCpu = cpuRatio('c', 'd')
    console.log(
      `CPU per request (nginx + node), bare/app: markets ${marketsCpu.toFixed(2)}, user ${userCpu.toFixed(2)}`,
    )

    const json = writeBenchJson('deployed', {
      connections: CONNECTIONS,
      seconds: SECONDS,
      pinned,
      rounds,
      markets: {
        bare: figures.a,
        app: figures.b,
        ratio: marketsRatio,
        cpuRatio: marketsCpu,
        bytes: markets.length,
      },
      user: { bare: figures.c, app: figures.d, ratio: userRatio, cpuRatio: userCpu, bytes: user.length },
      targets: targets.results,
    })
    if (json) console.log(`figures written to ${json}`)
    if (failures > 0) {
      console.log(`${failures} answer(s) were not 2xx or failed: see non-2xx and errors above`)
      process.exitCode = 1
    }
  } finally {
    await cleanup()
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

await main()
