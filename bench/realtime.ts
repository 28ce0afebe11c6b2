import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import os from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { setFlagsFromString, writeHeapSnapshot } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Pool } from 'undici'
import { WebSocket, WebSocketServer } from 'ws'
import { systemClock } from '../src/lib/clock.ts'
import { createEventBus } from '../src/lib/events.ts'
import { createUsersService } from '../src/modules/users/users.service.ts'
import { forkFleet, serveFleet } from './child-fleet.ts'
import { load1, percentile, startBenchApp, writeBenchJson } from './harness.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'
import { createTargets } from './targets.ts'

/**
 * The real-time socket server's fan-out: SOCKETS raw `ws` clients on one instance, all subscribed
 * to one group channel (`private-chat.group.N`: connection_established, POST
 * /api/broadcasting/auth as a signed-in member, pusher:subscribe, subscription_succeeded), then
 * chat messages posted over HTTP (POST /api/message) that the service broadcasts to all of them as
 * `App\Events\SocketMessage`.
 *
 * - delivery: MESSAGES messages posted one after another (each once every socket has the one
 *   before); for every socket and message, the time from just before the HTTP request to the
 *   socket's receipt of the frame: p50/p99 over all deliveries. Target (issue 28):
 *   `realtime-delivery-p99-vs-bare-ws`, p99 at most 1.3 times the bare server's.
 * - fan-out: BURST messages posted as fast as POSTERS concurrent posters can; deliveries per
 *   second from the first request to the last receipt.
 * - memory per idle socket: the server process's heap (V8 heap used + external) and RSS after a
 *   forced garbage collection, before and after the sockets are open and subscribed, over SOCKETS.
 *   Target (issue 28): `realtime-heap-per-socket`, at most 4 KiB per subscribed socket.
 *
 * SOCKETS (BENCH_SOCKETS) is 10,000 by default, the issue's instance; each process then needs that
 * many open files and some (twice that with BENCH_CLIENTS=inline). BENCH_HEAP_SNAPSHOT=dir writes
 * the server process's heap snapshot once each side's sockets are open and idle
 * (`baseline.heapsnapshot`, `service.heapsnapshot`), to see what a socket holds.
 *
 * The baseline, in the same run with the same clients: a bare `node:http` + `ws` server whose
 * POST /publish sends its body (the service's frame, rebuilt from a posted message's JSON) to every
 * socket: no protocol, no auth, no database. Ratios are service / baseline.
 *
 * The clients and the timing run in a child process (BENCH_CLIENTS=inline puts them in the
 * server's process): in process, their own work (2,000 frame reads a message) would be charged to
 * the server's event loop and their memory to the server's heap. Both processes, PostgreSQL and
 * whatever else runs here share the machine's cores.
 */

const SOCKETS = Number(process.env.BENCH_SOCKETS ?? 10_000)
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100)
// About 800,000 deliveries whatever the sockets (400 messages at 2,000).
const BURST = Number(process.env.BENCH_BURST ?? Math.max(20, Math.round(800_000 / SOCKETS)))
const WARMUP = 5
const INLINE = process.env.BENCH_CLIENTS === 'inline'
// 60 messages a minute per user: posters enough to stay under 50 each, template post included.
const POSTERS = Math.max(20, Math.ceil((MESSAGES + BURST + 2 * WARMUP + 1) / 50))
const SETUP_WIDTH = 50
const HTTP_CONNECTIONS = 64
const HEAP_PER_SOCKET_GOAL_KIB = 4
const DELIVERY_P99_RATIO_GOAL = 1.3
const DELIVERY_TIMEOUT_MS = 15_000
// A burst's frames may take this long to arrive, besides the timeout: 10,000 deliveries a second.
const BURST_MS_PER_DELIVERY = 0.1
// A socket each side of every connection (both sides in one process inline), and room for the rest.
const MIN_OPEN_FILES = SOCKETS * (INLINE ? 2 : 1) + 1000
const MARK = '[rt:'
const EVENT = 'App\\Events\\SocketMessage'
/** A message's marker: fixed width, so every frame of a run has the same size. */
const marker = (n: number) => `${MARK}${String(n).padStart(6, '0')}]`

// ---------------------------------------------------------------- the clients (child process)

interface Target {
  kind: 'service' | 'baseline'
  wsUrl: string
  httpUrl: string
  /** Service: the group channel and its group. */
  channel: string
  groupId: number
  /** Service: the signed-in headers of each member; socket i signs with member i % length. */
  members: Record<string, string>[]
  /** Baseline: the frame to publish, marker(0) standing for the message's marker. */
  template: string
}

interface DeliveryFigures {
  messages: number
  deliveries: number
  missing: number
  p50: number
  p99: number
  max: number
  /** Per message: the time to its last socket. */
  lastP50: number
  lastP99: number
  /** The HTTP answer of the post itself. */
  answerP50: number
  answerP99: number
  errors: number
  frameBytes: number
}

interface BurstFigures {
  messages: number
  deliveries: number
  missing: number
  seconds: number
  p50: number
  p99: number
  errors: number
  statuses: Record<number, number>
}

interface Fleet {
  /** Opens the HTTP pool's connections (so they are not counted as socket memory). */
  prepare(target: Target): Promise<void>
  /** Opens SOCKETS sockets, each subscribed (service) or open (baseline); answers the seconds taken. */
  open(sockets: number): Promise<number>
  delivery(messages: number, warmup: number): Promise<DeliveryFigures>
  burst(messages: number, posters: number): Promise<BurstFigures>
  close(): Promise<void>
}

interface Round {
  t0: number
  got: Uint8Array
  delays: Float64Array
  count: number
  last: number
  done: () => void
}

const sortedCopy = (values: ArrayLike<number>) => Array.from(values).sort((a, b) => a - b)
const ms = (n: number) => n.toFixed(1)

function createFleet(): Fleet {
  let target: Target
  let http: Pool
  let sockets: WebSocket[] = []
  const rounds = new Map<number, Round>()
  let next = 1
  let stray = 0
  let frameBytes = 0
  const mark = Buffer.from(MARK)

  /** A frame on a subscribed socket: the message number after MARK, read from the bytes. */
  const receive = (index: number, ws: WebSocket, data: Buffer) => {
    const now = performance.now()
    const at = data.indexOf(mark)
    if (at < 0) {
      if (data.includes('"pusher:ping"')) ws.send('{"event":"pusher:pong","data":{}}')
      return
    }
    let n = 0
    for (let i = at + mark.length; i < data.length; i++) {
      const c = data[i] as number
      if (c < 48 || c > 57) break
      n = n * 10 + c - 48
    }
    const round = rounds.get(n)
    if (!round) return void stray++
    if (round.got[index]) return
    round.got[index] = 1
    round.delays[index] = now - round.t0
    round.last = now
    frameBytes ||= data.length
    if (++round.count === sockets.length) round.done()
  }

  const newRound = (n: number) => {
    let done = () => {}
    const finished = new Promise<void>((resolve) => {
      done = resolve
    })
    const round: Round = {
      t0: performance.now(),
      got: new Uint8Array(sockets.length),
      delays: new Float64Array(sockets.length),
      count: 0,
      last: 0,
      done,
    }
    rounds.set(n, round)
    return { round, finished }
  }

  const waitFor = (finished: Promise<void>, extraMs = 0) =>
    Promise.race([
      finished,
      new Promise<void>((resolve) => setTimeout(resolve, DELIVERY_TIMEOUT_MS + extraMs).unref()),
    ])

  /** Posts message `n` as poster `poster`: the HTTP status and answer time. */
  async function post(n: number, poster: number): Promise<{ status: number; ms: number }> {
    const t0 = performance.now()
    const res =
      target.kind === 'service'
        ? await http.request({
            path: '/api/message',
            method: 'POST',
            headers: target.members[poster % target.members.length],
            body: JSON.stringify({
              group_id: target.groupId,
              body: `Realtime bench message ${marker(n)} from poster ${poster}: watching the 200-day line.`,
            }),
          })
        : await http.request({
            path: '/publish',
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: target.template.replace(marker(0), marker(n)),
          })
    await res.body.dump()
    return { status: res.statusCode, ms: performance.now() - t0 }
  }

  function openOne(index: number): Promise<WebSocket> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(target.wsUrl, { perMessageDeflate: false })
      const fail = (error: Error) => {
        ws.terminate()
        reject(error)
      }
      const ready = () => {
        ws.off('message', setup)
        ws.on('message', (data) => receive(index, ws, data as Buffer))
        resolve(ws)
      }
      const setup = (data: unknown) => {
        const frame = JSON.parse(String(data)) as { event: string; data?: string }
        if (frame.event === 'pusher:connection_established') {
          const socketId = (JSON.parse(frame.data ?? '{}') as { socket_id: string }).socket_id
          http
            .request({
              path: '/api/broadcasting/auth',
              method: 'POST',
              headers: target.members[index % target.members.length],
              body: JSON.stringify({ socket_id: socketId, channel_name: target.channel }),
            })
            .then(async (res) => {
              const text = await res.body.text()
              if (res.statusCode !== 200)
                throw new Error(`broadcasting/auth answered ${res.statusCode}: ${text}`)
              const { auth } = JSON.parse(text) as { auth: string }
              ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { auth, channel: target.channel } }))
            })
            .catch(fail)
        } else if (frame.event === 'pusher_internal:subscription_succeeded') ready()
        else if (frame.event === 'pusher:error') fail(new Error(`pusher:error ${frame.data}`))
      }
      ws.on('error', fail)
      ws.on('close', (code) => fail(new Error(`socket ${index} closed (${code}) before it was ready`)))
      if (target.kind === 'service') ws.on('message', setup)
      else ws.once('open', ready)
    })
  }

  return {
    async prepare(given) {
      target = given
      http = new Pool(target.httpUrl, { connections: HTTP_CONNECTIONS, pipelining: 1 })
      await Promise.all(
        Array.from({ length: HTTP_CONNECTIONS }, async (_, i) => {
          const res = await http.request({
            path: target.kind === 'service' ? '/api/credits' : '/',
            method: 'GET',
            headers: target.members[i % Math.max(1, target.members.length)] ?? {},
          })
          await res.body.dump()
        }),
      )
    },

    async open(count) {
      const started = performance.now()
      const opened: WebSocket[] = new Array(count)
      await Promise.all(
        Array.from({ length: SETUP_WIDTH }, async (_, worker) => {
          for (let i = worker; i < count; i += SETUP_WIDTH) opened[i] = await openOne(i)
        }),
      )
      sockets = opened
      for (const ws of sockets) {
        ws.removeAllListeners('close')
        ws.removeAllListeners('error')
        ws.on('error', () => {})
      }
      return (performance.now() - started) / 1000
    },

    async delivery(messages, warmup) {
      const all = new Float64Array(messages * sockets.length)
      const lasts: number[] = []
      const answers: number[] = []
      let missing = 0
      let errors = 0
      let filled = 0
      frameBytes = 0
      for (let i = 0; i < warmup + messages; i++) {
        const n = next++
        const { round, finished } = newRound(n)
        const answer = await post(n, i)
        if (answer.status !== 201) errors++
        await waitFor(finished)
        rounds.delete(n)
        if (i < warmup) continue
        answers.push(answer.ms)
        missing += sockets.length - round.count
        let last = 0
        for (let s = 0; s < sockets.length; s++) {
          if (!round.got[s]) continue
          const delay = round.delays[s] as number
          all[filled++] = delay
          if (delay > last) last = delay
        }
        lasts.push(last)
      }
      const sorted = all.subarray(0, filled).sort()
      const lastSorted = sortedCopy(lasts)
      const answerSorted = sortedCopy(answers)
      const at = (p: number) =>
        filled === 0 ? 0 : (sorted[Math.min(filled - 1, Math.ceil((p / 100) * filled) - 1)] ?? 0)
      return {
        messages,
        deliveries: filled,
        missing,
        p50: at(50),
        p99: at(99),
        max: filled ? (sorted[filled - 1] as number) : 0,
        lastP50: percentile(lastSorted, 50),
        lastP99: percentile(lastSorted, 99),
        answerP50: percentile(answerSorted, 50),
        answerP99: percentile(answerSorted, 99),
        errors,
        frameBytes,
      }
    },

    async burst(messages, posters) {
      const started = performance.now()
      const pending: { n: number; round: Round; finished: Promise<void> }[] = []
      const statuses: Record<number, number> = {}
      let errors = 0
      await Promise.all(
        Array.from({ length: posters }, async (_, poster) => {
          for (let i = poster; i < messages; i += posters) {
            const n = next++
            const { round, finished } = newRound(n)
            pending.push({ n, round, finished })
            const answer = await post(n, poster)
            statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
            if (answer.status !== 201) errors++
          }
        }),
      )
      await waitFor(
        Promise.all(pending.map((p) => p.finished)).then(() => {}),
        messages * sockets.length * BURST_MS_PER_DELIVERY,
      )
      let deliveries = 0
      let last = started
      const delays: number[] = []
      for (const { n, round } of pending) {
        rounds.delete(n)
        deliveries += round.count
        if (round.last > last) last = round.last
        for (let s = 0; s < round.got.length; s++) if (round.got[s]) delays.push(round.delays[s] as number)
      }
      delays.sort((a, b) => a - b)
      return {
        messages,
        deliveries,
        missing: messages * sockets.length - deliveries,
        seconds: (last - started) / 1000,
        p50: percentile(delays, 50),
        p99: percentile(delays, 99),
        errors,
        statuses,
      }
    },

    async close() {
      await Promise.all(
        sockets.map(
          (ws) =>
            new Promise<void>((resolve) => {
              if (ws.readyState === ws.CLOSED) return resolve()
              ws.once('close', () => resolve())
              ws.close()
            }),
        ),
      )
      sockets = []
      await http.close()
      if (stray > 0) console.warn(`clients: ${stray} frames for no message in flight`)
    },
  }
}

// ---------------------------------------------------------------- the servers (this process)

/** The soft limit on open files, from /proc (Node cannot raise it), or null where there is none. */
function openFilesLimit(): number | null {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0]
    return soft === 'unlimited' ? Number.POSITIVE_INFINITY : Number(soft)
  } catch {
    return null
  }
}

/** A forced collection if this process can have one (--expose-gc, or the flag set at run time). */
function findGc(): (() => void) | null {
  const exposed = (globalThis as { gc?: () => void }).gc
  if (typeof exposed === 'function') return exposed
  try {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as unknown
    return typeof gc === 'function' ? (gc as () => void) : null
  } catch {
    return null
  }
}
const gc = findGc()

interface Memory {
  heap: number
  rss: number
}
async function memory(): Promise<Memory> {
  for (let i = 0; i < 3; i++) {
    gc?.()
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const m = process.memoryUsage()
  return { heap: m.heapUsed + m.external, rss: m.rss }
}

/** The baseline: node:http + ws, POST /publish sends its body to every socket as it is. */
async function startBareServer() {
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/publish') return void res.writeHead(204).end()
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const frame = Buffer.concat(chunks).toString()
      for (const ws of wss.clients) if (ws.readyState === ws.OPEN) ws.send(frame)
      res.writeHead(201, { 'content-type': 'application/json' }).end('{}')
    })
  })
  // Idle keep-alive connections kept as long as the app keeps them (72 s): with Node's 5 s, a post
  // could go out on a connection the server was closing (ECONNRESET), the fan-outs delaying timers.
  server.keepAliveTimeout = 72_000
  const wss = new WebSocketServer({ server, perMessageDeflate: false, maxPayload: 64 * 1024 })
  wss.on('connection', (ws) => ws.on('error', () => {}))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (!address || typeof address === 'string') throw new Error('no port')
  return {
    port: address.port,
    connections: () => wss.clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate()
        wss.close(() => server.close(() => resolve()))
      }),
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

interface Side {
  setupSeconds: number
  before: Memory
  after: Memory
  delivery: DeliveryFigures
  deliveryLoad: string
  /** The server process's event loop delay during the delivery run (ms). */
  loopDelay: { p99: number; max: number }
  burst: BurstFigures
  burstLoad: string
}

async function measure(fleet: Fleet, target: Target, sockets: () => number): Promise<Side> {
  await fleet.prepare(target)
  const before = await memory()
  const setupSeconds = await fleet.open(SOCKETS)
  await until(() => sockets() === SOCKETS, `${SOCKETS} sockets on the server`)
  const after = await memory()
  if (process.env.BENCH_HEAP_SNAPSHOT)
    console.log(
      `heap snapshot: ${writeHeapSnapshot(`${process.env.BENCH_HEAP_SNAPSHOT}/${target.kind}.heapsnapshot`)}`,
    )
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const delivery = await fleet.delivery(MESSAGES, WARMUP)
  loop.disable()
  const loopDelay = { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 }
  const deliveryLoad = load1()
  const burst = await fleet.burst(BURST, POSTERS)
  const burstLoad = load1()
  await fleet.close()
  await until(() => sockets() === 0, 'the sockets to close')
  return { setupSeconds, before, after, delivery, deliveryLoad, loopDelay, burst, burstLoad }
}

async function main() {
  const limit = openFilesLimit()
  if (limit !== null && limit < MIN_OPEN_FILES) {
    console.error(
      `bench:realtime needs at least ${MIN_OPEN_FILES} open files (a socket each side of ${SOCKETS} connections, ` +
        `twice in one process with BENCH_CLIENTS=inline, and some more); this shell allows ${limit}. Raise it first: ` +
        `ulimit -n ${MIN_OPEN_FILES} (Node cannot raise its own limit), or lower BENCH_SOCKETS.`,
    )
    process.exitCode = 1
    return
  }

  // Every bench socket comes from 127.0.0.1: one address, let it hold them all (and the instance
  // take them all, past its default of 10,000).
  const bench = await startBenchApp('bench_realtime', {
    REVERB_MAX_CONNECTIONS: String(Math.max(SOCKETS, 10_000)),
    REVERB_MAX_CONNECTIONS_PER_ADDRESS: String(SOCKETS),
  })
  const { app, config, database, appUrl } = bench
  const fleet = INLINE
    ? { ...createFleet(), stop() {} }
    : forkFleet<Fleet>(fileURLToPath(import.meta.url), ['prepare', 'open', 'delivery', 'burst', 'close'])
  try {
    // Members signed in over HTTP (argon2: a few at a time); the first creates the group, the rest join.
    const http = new Pool(appUrl, { connections: 8, pipelining: 1 })
    const users = createUsersService({ db: database.db, clock: systemClock, events: createEventBus() })
    const members: Record<string, string>[] = new Array(POSTERS)
    const setupStarted = performance.now()
    await Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        for (let i = worker; i < POSTERS; i += 4) {
          const email = `bench-rt-${i}@example.com`
          await users.create({ name: `Bench ${i}`, email, password: BENCH_PASSWORD, verified: true })
          members[i] = await signIn(http, email)
        }
      }),
    )
    const request = async (path: string, headers: Record<string, string> | undefined, body: unknown) => {
      const res = await http.request({ path, method: 'POST', headers, body: JSON.stringify(body) })
      const text = await res.body.text()
      if (res.statusCode >= 300) throw new Error(`POST ${path} answered ${res.statusCode}: ${text}`)
      return JSON.parse(text) as { data: Record<string, unknown> & { id: number } }
    }
    const group = await request('/api/group', members[0], { name: 'Realtime bench' })
    const groupId = group.data.id
    for (const headers of members.slice(1)) await request(`/api/group/${groupId}/join`, headers, {})
    const channel = `private-chat.group.${groupId}`
    // The frame the service will send, from a message's own JSON, for the baseline to send.
    const sample = await request('/api/message', members[0], {
      group_id: groupId,
      body: `Realtime bench message ${marker(0)} from poster 0: watching the 200-day line.`,
    })
    const template = JSON.stringify({ event: EVENT, channel, data: JSON.stringify({ message: sample.data }) })
    await http.close()
    const setupSeconds = (performance.now() - setupStarted) / 1000

    const bare = await startBareServer()
    const baseline = await measure(
      fleet,
      {
        kind: 'baseline',
        wsUrl: `ws://127.0.0.1:${bare.port}/app/bare`,
        httpUrl: `http://127.0.0.1:${bare.port}`,
        channel,
        groupId,
        members: [],
        template,
      },
      bare.connections,
    )
    await bare.close()

    let subscribed = 0
    const service = await measure(
      fleet,
      {
        kind: 'service',
        wsUrl: `${appUrl.replace('http:', 'ws:')}/app/${config.realtime.key}?protocol=7&client=js&version=8.6.0`,
        httpUrl: appUrl,
        channel,
        groupId,
        members,
        template: '',
      },
      () => {
        const count = app.realtime.hub.connectionCount()
        if (count === SOCKETS) subscribed = app.realtime.hub.channels().get(channel) ?? 0
        return count
      },
    )

    // Every close handled: the channel is gone from the hub.
    const leftover = app.realtime.hub.channels().get(channel) ?? 0

    // ---------------------------------------------------------------- report
    const cpu = os.cpus()
    const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`
    const perSocket = (side: Side, key: keyof Memory) => (side.after[key] - side.before[key]) / SOCKETS
    const ratio = (b: number, a: number) => (a > 0 ? (b / a).toFixed(2) : 'n/a')
    const rate = (b: BurstFigures) => b.deliveries / b.seconds
    const deliveryLine = (label: string, side: Side) => {
      const d = side.delivery
      return (
        `${label.padEnd(30)} p50 ${ms(d.p50)} ms   p99 ${ms(d.p99)} ms   max ${ms(d.max)} ms   last socket p50 ${ms(d.lastP50)} / p99 ${ms(d.lastP99)} ms   ` +
        `HTTP answer p50 ${ms(d.answerP50)} ms   server event loop delay p99 ${ms(side.loopDelay.p99)} / max ${ms(side.loopDelay.max)} ms   ` +
        `${d.deliveries} deliveries, ${d.missing} missing, ${d.errors} errors   load ${side.deliveryLoad}`
      )
    }
    const burstLine = (label: string, b: BurstFigures, load: string) =>
      `${label.padEnd(30)} ${rate(b).toFixed(0).padStart(7)} deliveries/s (${(b.messages / b.seconds).toFixed(0)} messages/s x ${SOCKETS} sockets, ` +
      `${b.seconds.toFixed(2)} s)   delay under load p50 ${ms(b.p50)} / p99 ${ms(b.p99)} ms   ${b.missing} missing, ` +
      `answers ${Object.entries(b.statuses)
        .map(([status, n]) => `${n} x ${status}`)
        .join(', ')}   load ${load}`
    const memoryLine = (label: string, side: Side) =>
      `${label.padEnd(30)} heap ${kib(perSocket(side, 'heap'))}   RSS ${kib(perSocket(side, 'rss'))} per socket ` +
      `(heap ${(side.before.heap / 2 ** 20).toFixed(1)} -> ${(side.after.heap / 2 ** 20).toFixed(1)} MiB, ` +
      `RSS ${(side.before.rss / 2 ** 20).toFixed(1)} -> ${(side.after.rss / 2 ** 20).toFixed(1)} MiB); opened in ${side.setupSeconds.toFixed(1)} s`

    console.log(
      `realtime benchmark: ${SOCKETS} sockets on one instance, one group channel, ${POSTERS} members posting over HTTP; ` +
        `clients ${INLINE ? 'IN THE SERVER PROCESS (memory figures include them)' : 'in a child process'}; PostgreSQL, one app instance`,
    )
    console.log(
      `machine: ${cpu.length} x ${cpu[0]?.model ?? 'unknown cpu'}, node ${process.version}, open files ${limit ?? '?'}, ` +
        `load average at the end ${os
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}`,
    )
    console.log(
      `setup: ${POSTERS} members signed in and joined in ${setupSeconds.toFixed(1)} s; ${subscribed} sockets subscribed to ${channel} ` +
        `(server's count), ${leftover} left after closing; frame ${service.delivery.frameBytes} bytes (baseline ${baseline.delivery.frameBytes})`,
    )
    console.log(
      `delivery: ${MESSAGES} messages one after another (after ${WARMUP} unmeasured), request -> each socket`,
    )
    console.log(deliveryLine('  (a) baseline bare ws', baseline))
    console.log(deliveryLine('  (b) POST /api/message', service))
    const deliveryRatio = service.delivery.p99 / baseline.delivery.p99
    console.log(
      `      ratio b/a: p50 ${(service.delivery.p50 / baseline.delivery.p50).toFixed(2)}, p99 ${deliveryRatio.toFixed(2)}`,
    )
    console.log(
      `fan-out: ${BURST} messages from ${POSTERS} concurrent posters, first request -> last receipt`,
    )
    console.log(burstLine('  (a) baseline bare ws', baseline.burst, baseline.burstLoad))
    console.log(burstLine('  (b) POST /api/message', service.burst, service.burstLoad))
    console.log(`      ratio b/a: ${(rate(service.burst) / rate(baseline.burst)).toFixed(2)} (deliveries/s)`)
    console.log(
      `memory per idle socket (server process, ${gc ? 'after forced gc' : 'APPROXIMATE: no gc available'}, ${SOCKETS} sockets):`,
    )
    console.log(memoryLine('  (a) baseline bare ws', baseline))
    console.log(memoryLine('  (b) subscribed Pusher socket', service))
    console.log(
      `      ratio b/a: heap ${ratio(perSocket(service, 'heap'), perSocket(baseline, 'heap'))}; no RSS ratio: the allocator reuses pages freed earlier ` +
        `(the sign-ins' argon2 buffers among them), so RSS deltas undercount and are approximate`,
    )
    const targets = createTargets()
    targets.check(
      'realtime-heap-per-socket',
      perSocket(service, 'heap') / 1024,
      '<=',
      HEAP_PER_SOCKET_GOAL_KIB,
      {
        label: `heap per idle subscribed socket (${SOCKETS} sockets)`,
        unit: ' KiB',
      },
    )
    targets.check('realtime-delivery-p99-vs-bare-ws', deliveryRatio, '<=', DELIVERY_P99_RATIO_GOAL, {
      label: `delivery p99 b/a (${SOCKETS} sockets)`,
    })
    const json = writeBenchJson('realtime', {
      sockets: SOCKETS,
      messages: MESSAGES,
      burst: BURST,
      baseline,
      service,
      targets: targets.results,
    })
    if (json) console.log(`figures written to ${json}`)
    const sides = [baseline, service]
    if (
      sides.some(
        (s) => s.delivery.missing > 0 || s.delivery.errors > 0 || s.burst.missing > 0 || s.burst.errors > 0,
      ) ||
      subscribed !== SOCKETS ||
      leftover > 0
    ) {
      process.exitCode = 1
    }
  } finally {
    if (INLINE) await fleet.close().catch(() => {})
    fleet.stop()
    await bench.close()
  }
}

if (process.argv.includes('--fleet')) serveFleet(createFleet)
else await main()
