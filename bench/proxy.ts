/**
 * `npm run bench:proxy`: what the caching proxy costs on a warm cache, and single-flight on a cold key.
 *
 * In one run, on loopback, the servers in a child process pinned to CPU 0 and the load generator
 * (autocannon) in this process pinned to CPU 1, so neither takes the other's core (BENCH_PIN=0: no
 * pinning):
 *   (a) a bare node:http server answering the very bytes `GET /api/markets` answers;
 *   (f) for scale, Fastify alone (no logger, no hooks) answering the same bytes from one route: the
 *       framework's own floor, which (b) cannot go below;
 *   (b) the app with its production defaults (NODE_ENV=production, LOG_LEVEL unset: its access log
 *       at `info`, written to the child's stdout, which is /dev/null) answering `GET /api/markets` to
 *       a signed-in session on a warm cache, PGlite in a temp DATA_DIR, a local simulated upstream;
 *   each at BENCH_CONNECTIONS (64) connections, each sent the same request (the session's cookies
 *   too), after a one-second warm-up each, in BENCH_ROUNDS (5) rounds of BENCH_SECONDS (3) s per
 *   server, the order reversed every other round (a f b, b f a, ...): a shared machine's speed drifts
 *   by a third within a minute, so each round's b/a compares runs seconds apart, and the figures
 *   printed are the medians over the rounds (each round's ratio too). Printed: the request rates,
 *   CPU per request, the ratio b/a (r/a) and p50/p99 latency, and a target line for each goal.
 *   (c) BENCH_COLD (1000) concurrent requests for one cold key: how many upstream calls were made.
 * BENCH_DATABASE_URL (optional) runs the app on that PostgreSQL database instead of PGlite.
 * BENCH_REDIS_URL (optional) adds (r): the same app configured with that Redis, as every instance of a
 *   multi-instance deployment is, measured in the same rounds as (a), (f) and (b): the throttle's
 *   count is then a round trip away, the session and the shared answer are held in memory.
 * BENCH_METRICS=1 sets METRICS_TOKEN, so (b) also counts and times each request for GET /metrics.
 * BENCH_LOG_LEVEL sets the app's LOG_LEVEL (`warn`: no access line), to see what the line costs.
 * BENCH_CPU_PROFILE=path writes a CPU profile of the servers' process during the last round's (b) to
 *   path, and during its (a) and (f) beside it (path with `.bare` and `.fastify` before its extension), to compare them.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { Session } from 'node:inspector/promises'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import Fastify from 'fastify'
import { Agent, Pool, request } from 'undici'
import { buildApp } from '../src/app.ts'
import { generateAppKey, loadConfig } from '../src/config.ts'
import { systemClock } from '../src/lib/clock.ts'
import { createEventBus } from '../src/lib/events.ts'
import { createUsersService } from '../src/modules/users/users.service.ts'
import { createSimulator } from '../src/upstream-sim/simulator.ts'
import { forkFleet, serveFleet } from './child-fleet.ts'
import { machine, median, pinToCore, processCpuMs, writeBenchJson } from './harness.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'
import { createTargets } from './targets.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5))
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const COLD = Number(process.env.BENCH_COLD ?? 1000)
// An upstream answer takes this long, so the cold requests really overlap one call in flight.
const UPSTREAM_DELAY_MS = Number(process.env.BENCH_UPSTREAM_DELAY_MS ?? 50)
const READ_RATIO_GOAL = 0.6
const READ_P99_GOAL_MS = 5
const TOKEN = 'bench-upstream-token'
const SERVER_CORE = 0
const LOAD_CORE = 1

const listen = async (server: Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
const stop = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  })

/** The simulated upstream over HTTP, counting the calls it gets per path. */
async function countingUpstream() {
  const simulator = createSimulator()
  const calls = new Map<string, number>()
  const server = createServer((req, res) => {
    const url = req.url ?? '/'
    const [path = '/', query = ''] = url.split('?')
    calls.set(path, (calls.get(path) ?? 0) + 1)
    req.resume()
    req.on('end', () => {
      setTimeout(() => {
        const userId = req.headers['x-user-id']
        const answer = simulator.handle({
          method: req.method ?? 'GET',
          path,
          query: new URLSearchParams(query),
          userId: typeof userId === 'string' ? userId : undefined,
          body: undefined,
        })
        res.writeHead(answer.status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(answer.body))
      }, UPSTREAM_DELAY_MS)
    })
  })
  return { url: await listen(server), calls, close: () => stop(server) }
}

/** The app as one run measures it: where it answers, and the signed-in session's headers. */
interface AppUnderLoad {
  url: string
  headers: Record<string, string>
}

/** What the server process offers the measuring one. */
interface Servers {
  /**
   * Starts the upstream, the app (signed-in session, warm entry), with BENCH_REDIS_URL a second app
   * configured with that Redis, and the bare server and Fastify alone on the answer's bytes.
   */
  start(): Promise<{
    embedded: AppUnderLoad
    redis: AppUnderLoad | undefined
    bareUrl: string
    fastifyUrl: string
    bytes: number
  }>
  /** Starts (or, given a path, stops and writes) a CPU profile of this process. */
  profile(path?: string): Promise<void>
  upstreamCalls(path: string): Promise<number>
  close(): Promise<void>
}

/**
 * The app with its production defaults on a temp DATA_DIR (PGlite, or BENCH_DATABASE_URL), given
 * `redisUrl` configured with that Redis under a key prefix of its own (nothing another run left
 * there is warm for this one); a user signed in, and the markets entry warm.
 */
async function startApp(upstreamUrl: string, redisUrl: string | undefined) {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'bench-proxy-'))
  const config = loadConfig(
    {
      NODE_ENV: 'production',
      // An ablation only (BENCH_LOG_LEVEL=warn: no access line); the figures are taken without it.
      ...(process.env.BENCH_LOG_LEVEL ? { LOG_LEVEL: process.env.BENCH_LOG_LEVEL } : {}),
      APP_KEY: generateAppKey(),
      DATA_DIR: dataDir,
      UPSTREAM_BASE_URL: upstreamUrl,
      UPSTREAM_API_TOKEN: TOKEN,
      // Production requires the socket app's credentials; the bench opens no socket.
      REVERB_APP_ID: 'bench',
      REVERB_APP_KEY: 'bench-key',
      REVERB_APP_SECRET: randomBytes(20).toString('hex'),
      // Long enough that the warm entry stays warm for the whole run.
      CACHE_TTL_SECONDS: '3600',
      // One session sends every request here: its per-user read limit is counted, as always, but
      // set above what the run sends, so the figures include what the limit costs and no 429.
      PROXY_READS_PER_MINUTE: '9999999',
      ...(process.env.BENCH_DATABASE_URL ? { DATABASE_URL: process.env.BENCH_DATABASE_URL } : {}),
      ...(process.env.BENCH_METRICS === '1' ? { METRICS_TOKEN: randomBytes(20).toString('hex') } : {}),
      ...(redisUrl ? { REDIS_URL: redisUrl, REDIS_PREFIX: `bench-${randomBytes(4).toString('hex')}:` } : {}),
    },
    dataDir,
  )
  const app = await buildApp(config)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const appUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const http = new Pool(appUrl, { connections: 4 })
  const email = `bench-${randomBytes(4).toString('hex')}@example.com`
  await createUsersService({ db: app.db, clock: systemClock, events: createEventBus() }).create({
    name: 'Bench',
    email,
    password: BENCH_PASSWORD,
    verified: true,
  })
  const { cookie } = await signIn(http, email)
  await http.close()
  const headers = { cookie, accept: 'application/json' }

  // Warm the entry, and take its exact bytes for the bare server.
  const warm = await request(`${appUrl}/api/markets`, { headers })
  const bytes = Buffer.from(await warm.body.arrayBuffer())
  if (warm.statusCode !== 200) throw new Error(`GET /api/markets answered ${warm.statusCode}: ${bytes}`)
  const again = await request(`${appUrl}/api/markets`, { headers })
  await again.body.dump()
  if (again.headers['x-cache'] !== 'HIT') throw new Error('the markets entry did not stay cached')
  return {
    url: `${appUrl}/api/markets`,
    headers,
    bytes,
    close: async () => {
      await app.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

function createServers(): Servers {
  let closeAll = async () => {}
  let upstream: Awaited<ReturnType<typeof countingUpstream>> | undefined
  const inspector = new Session()
  return {
    async start() {
      upstream = await countingUpstream()
      const upstreamUrl = upstream.url
      const embedded = await startApp(upstreamUrl, undefined)
      const redisUrl = process.env.BENCH_REDIS_URL
      const redis = redisUrl ? await startApp(upstreamUrl, redisUrl) : undefined

      const bare = createServer((_req, res) => {
        res.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': embedded.bytes.length,
        })
        res.end(embedded.bytes)
      })
      const bareUrl = await listen(bare)
      const floor = Fastify()
      floor.get('/api/markets', (_request, reply) => {
        reply.type('application/json; charset=utf-8').send(embedded.bytes)
      })
      await floor.listen({ host: '127.0.0.1', port: 0 })
      const fastifyUrl = `http://127.0.0.1:${(floor.server.address() as AddressInfo).port}/api/markets`
      closeAll = async () => {
        await stop(bare)
        await floor.close()
        await redis?.close()
        await embedded.close()
        await upstream?.close()
      }
      const underLoad = ({ url, headers }: AppUnderLoad) => ({ url, headers })
      return {
        embedded: underLoad(embedded),
        redis: redis && underLoad(redis),
        bareUrl,
        fastifyUrl,
        bytes: embedded.bytes.length,
      }
    },
    async profile(path) {
      if (path === undefined) {
        inspector.connect()
        await inspector.post('Profiler.enable')
        await inspector.post('Profiler.start')
        return
      }
      const { profile } = await inspector.post('Profiler.stop')
      writeFileSync(path, JSON.stringify(profile))
      inspector.disconnect()
    },
    upstreamCalls: async (path) => upstream?.calls.get(path) ?? 0,
    close: () => closeAll(),
  }
}

interface Figures {
  rate: number
  /** The servers' process's CPU time per answered request (µs): what one costs, however busy the machine. */
  cpuMicros: number | null
  p50: number
  p99: number
  non2xx: number
  errors: number
}

async function load(
  url: string,
  headers: Record<string, string>,
  serverPid: number,
  seconds = SECONDS,
): Promise<Figures> {
  const cpuBefore = processCpuMs(serverPid)
  const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: seconds })
  const cpuAfter = processCpuMs(serverPid)
  const answered = result.requests.total
  return {
    rate: result.requests.average,
    cpuMicros:
      cpuBefore === null || cpuAfter === null || answered === 0
        ? null
        : Math.round(((cpuAfter - cpuBefore) * 10_000) / answered) / 10,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  }
}

async function main() {
  const servers = forkFleet<Servers>(
    fileURLToPath(import.meta.url),
    ['start', 'profile', 'upstreamCalls', 'close'],
    {
      stdout: 'ignore',
    },
  )
  const { cores, cpu, node, loadAverage } = machine()
  const pinned = pinToCore(servers.pid, SERVER_CORE) && pinToCore(process.pid, LOAD_CORE)
  try {
    const { embedded, redis, bareUrl, fastifyUrl, bytes } = await servers.start()
    const { headers } = embedded
    console.log(`machine: ${cores} × ${cpu}, load average ${loadAverage.join(' ')}, node ${node}`)
    console.log(
      pinned
        ? `servers pinned to CPU ${SERVER_CORE}, load generator to CPU ${LOAD_CORE}`
        : 'not pinned: servers and load generator share the cores',
    )
    console.log(
      `GET /api/markets answer: ${bytes} bytes; ${CONNECTIONS} connections, ${SECONDS} s each, ${ROUNDS} rounds\n`,
    )

    const profilePath = process.env.BENCH_CPU_PROFILE
    const profiled = async (url: string, runHeaders: Record<string, string>, path: string) => {
      await servers.profile()
      const figures = await load(url, runHeaders, servers.pid)
      await servers.profile(path)
      return figures
    }
    type RunName = 'a' | 'f' | 'b' | 'r'
    // Every run gets the same request, cookies included (each app its own session's, of the same
    // size): parsing what the client sends is not the app's own work.
    const runs: { name: RunName; url: string; headers: Record<string, string>; suffix: string }[] = [
      { name: 'a', url: bareUrl, headers, suffix: '.bare' },
      { name: 'f', url: fastifyUrl, headers, suffix: '.fastify' },
      { name: 'b', url: embedded.url, headers, suffix: '' },
      ...(redis ? [{ name: 'r' as const, url: redis.url, headers: redis.headers, suffix: '.redis' }] : []),
    ]
    for (const run of runs) await load(run.url, run.headers, servers.pid, 1)
    type Round = Partial<Record<RunName, Figures>>
    const rounds: Round[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const figures: Round = {}
      for (const run of round % 2 ? [...runs].reverse() : runs) {
        figures[run.name] =
          profilePath && round === ROUNDS - 1
            ? await profiled(run.url, run.headers, profilePath.replace(/(\.[^./]*)?$/, `${run.suffix}$1`))
            : await load(run.url, run.headers, servers.pid)
      }
      rounds.push(figures)
      console.log(
        `round ${round + 1}: ${runs.map(({ name }) => `${name} ${figures[name]?.rate.toFixed(0)}`).join(', ')} req/s; ` +
          runs
            .filter(({ name }) => name === 'b' || name === 'r')
            .map(
              ({ name }) => `${name}/a ${((figures[name]?.rate ?? 0) / (figures.a?.rate ?? 1)).toFixed(2)}`,
            )
            .join(', '),
      )
    }
    const middle = (name: RunName): Figures => {
      const all = rounds.map((round) => round[name] as Figures)
      const cpu = all.map((run) => run.cpuMicros).filter((micros) => micros !== null)
      return {
        rate: median(all.map((run) => run.rate)),
        cpuMicros: cpu.length === all.length ? median(cpu) : null,
        p50: median(all.map((run) => run.p50)),
        p99: median(all.map((run) => run.p99)),
        non2xx: all.reduce((sum, run) => sum + run.non2xx, 0),
        errors: all.reduce((sum, run) => sum + run.errors, 0),
      }
    }
    const [a, f, b] = [middle('a'), middle('f'), middle('b')]
    const r = redis ? middle('r') : undefined
    const ratio = (top: RunName, bottom: RunName) =>
      median(rounds.map((round) => (round[top]?.rate ?? 0) / (round[bottom]?.rate ?? 1)))

    const row = (name: string, f: Figures) =>
      `${name.padEnd(40)} ${f.rate.toFixed(0).padStart(8)} req/s   p50 ${String(f.p50).padStart(4)} ms   p99 ${String(f.p99).padStart(4)} ms   CPU ${f.cpuMicros ?? '?'} µs/request   non-2xx ${f.non2xx}, errors ${f.errors}`
    console.log(`\nmedians over ${ROUNDS} rounds:`)
    console.log(row('(a) bare node:http, same bytes', a))
    console.log(row('(f) Fastify alone, same bytes', f))
    console.log(row('(b) app, GET /api/markets (warm)', b))
    if (r) console.log(row('(r) app with Redis, GET /api/markets (warm)', r))
    console.log(`f/a ${ratio('f', 'a').toFixed(2)}, b/f ${ratio('b', 'f').toFixed(2)}`)
    const targets = createTargets()
    targets.check('proxy-cached-read', ratio('b', 'a'), '>=', READ_RATIO_GOAL, { label: 'b/a' })
    targets.check('proxy-cached-read-p99', b.p99, '<=', READ_P99_GOAL_MS, {
      label: 'p99',
      unit: ' ms',
      digits: 0,
    })
    if (r) {
      targets.check('proxy-cached-read-redis', ratio('r', 'a'), '>=', READ_RATIO_GOAL, { label: 'r/a' })
      targets.check('proxy-cached-read-redis-p99', r.p99, '<=', READ_P99_GOAL_MS, {
        label: 'p99',
        unit: ' ms',
        digits: 0,
      })
    }
    console.log('')
    if (profilePath) console.log(`CPU profiles of (b) written to ${profilePath}, of (a) and (f) beside it\n`)

    // (c) A key nobody read yet, asked for by COLD clients at once, each on its own connection.
    const coldPath = '/tickers'
    const before = await servers.upstreamCalls(coldPath)
    const agent = new Agent({ connections: COLD, pipelining: 0 })
    const statuses = await Promise.all(
      Array.from({ length: COLD }, async () => {
        const res = await request(`${embedded.url.replace('/api/markets', '/api')}${coldPath}`, {
          headers,
          dispatcher: agent,
        })
        await res.body.dump()
        return res.statusCode
      }),
    )
    await agent.close()
    const ok = statuses.filter((s) => s === 200).length
    const calls = (await servers.upstreamCalls(coldPath)) - before
    console.log(`(c) ${COLD} concurrent cold requests for GET /api${coldPath}: ${ok} answered 200`)
    targets.check('proxy-cold-single-flight', calls, '<=', 1, { label: 'upstream calls', digits: 0 })
    const json = writeBenchJson('proxy', {
      connections: CONNECTIONS,
      seconds: SECONDS,
      pinned,
      rounds,
      bare: a,
      fastify: f,
      markets: b,
      ratio: ratio('b', 'a'),
      ...(r ? { redis: { markets: r, ratio: ratio('r', 'a') } } : {}),
      cold: { requests: COLD, ok, upstreamCalls: calls },
      targets: targets.results,
    })
    if (json) console.log(`figures written to ${json}`)
    if ([a, f, b, ...(r ? [r] : [])].some((run) => run.errors + run.non2xx > 0) || ok !== COLD)
      process.exitCode = 1
  } finally {
    await servers.close().catch(() => {})
    servers.stop()
  }
}

if (process.argv.includes('--fleet')) serveFleet(createServers)
else await main()
