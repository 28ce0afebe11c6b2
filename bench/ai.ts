import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { availableParallelism } from 'node:os'
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import { Pool } from 'undici'
import { systemClock } from '../src/lib/clock.ts'
import { createEventBus } from '../src/lib/events.ts'
import { createUsersService } from '../src/modules/users/users.service.ts'
import { FakeModel, type ModelRequest, type ModelScript } from '../test/helpers/fake-model.ts'
import { forkFleet, serveFleet } from './child-fleet.ts'
import {
  cpuBetween,
  cpuSnapshot,
  load1,
  machine,
  mainThreadCpuMs,
  percentile,
  startBenchApp,
  writeBenchJson,
} from './harness.ts'
import { BENCH_PASSWORD, signIn } from './sign-in.ts'
import { createTargets } from './targets.ts'

/**
 * `npm run bench:ai`: what the support agent adds to a model's first token, with about STREAMS streams
 * open at once.
 *
 * A fake OpenAI-compatible model (test/helpers/fake-model.ts, a real HTTP server) answers every
 * chat/completions request with a streamed text: MODEL_DELAY_MS before its first chunk, then
 * MODEL_CHUNKS chunks MODEL_GAP_MS apart (about two seconds an answer). The app (PostgreSQL via
 * BENCH_DATABASE_URL, one instance) has it as AI_BASE_URL. Two kinds of stream, read by the same SSE
 * reader (which notes when each event arrived):
 *
 *   direct:  POST {model}/chat/completions with `stream: true`, first text = first chunk with content;
 *   service: POST /api/ai/agents/support as one of USERS signed-in users, first text = first
 *            `text-delta` chunk.
 *
 * Each stream's user message carries a unique `[bench N]`, which reaches the model (the service passes
 * the user's text on), so every stream is matched with its own model request. The fake model notes
 * when it wrote that request's first chunk (`ModelRequest.firstChunkAt`); it runs in the same process
 * as the clients, so both times are on one clock. The figures:
 *
 *   pass-through (the headline: what the service adds to the model's first token): the client's first
 *     text minus the model's first content chunk for that stream. The direct streams' pass-through is
 *     the floor of the method (loopback and the clients' own event loop, no app in between).
 *   TTFT: from the request's start to the first text, service and direct (the service's includes the
 *     request, the session, the ai_calls insert and the model request it makes).
 *
 * Load shapes, one after the other, direct then service each time:
 *
 *   steady: an open-loop schedule, one stream started every 1/RATE s whatever the others are doing,
 *     RATE = STREAMS / the answer's length, so about STREAMS are open at once. The first RAMP_S
 *     seconds are not counted (the open count climbing, code warming); the streams started in the
 *     MEASURE_S seconds after are. Each start notes how many streams were open (itself included) and
 *     how late it was on the schedule (the clients' own lag).
 *   burst: BURST streams started in the same instant (0 skips it), all counted. This measures mostly
 *     the queue the burst makes in the app (each stream's start costs a few ms of its one thread).
 *
 * During each steady measured window: event-loop delay (p50/p99/max) of the app process and of the
 * clients' process, the app's GC pauses, and CPU (/proc) of the app (and its main thread alone), the
 * clients, PostgreSQL's backends for this database, and everything else on the machine (another
 * session's tests, say). Errors (target 0), over every stream of every phase: answers other than 200,
 * streams without `data: [DONE]`, `error` chunks, streams without text, streams not matched with a
 * model request; then the model's request count and `ai_calls` (every service stream `completed`).
 *
 * Targets (issue 28), printed as `target <name>: ... met|NOT met` and kept in the JSON's `targets`:
 * `ai-cpu-per-40-chunk-stream` (the app's main-thread CPU over the steady service window by the streams
 * started in it, <= 2 ms; the name carries MODEL_CHUNKS) and `ai-pass-through-p99` (<= 5 ms).
 *
 * Knobs (environment): BENCH_STREAMS (200), BENCH_USERS (100; the agents allow 60 streams a minute
 * each), BENCH_MODEL_DELAY_MS (50), BENCH_MODEL_CHUNKS (40), BENCH_MODEL_GAP_MS (50), BENCH_RATE
 * (streams/s; STREAMS over the answer's length), BENCH_RAMP_S (the answer's length + 0.5),
 * BENCH_MEASURE_S (8), BENCH_BURST (STREAMS). About 35 s with the defaults.
 *
 * The model and the clients run in a child process (a model server elsewhere would not be charged
 * to the app's event loop); BENCH_CLIENTS=inline puts them in this one. BENCH_JSON=path writes the
 * figures as JSON; BENCH_CPU_PROFILE=path profiles the app process over the steady service window,
 * writes the .cpuprofile and prints where its time went (the profiler costs time too: take the
 * figures from a run without it).
 */

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback)
const STREAMS = env('BENCH_STREAMS', 200)
const USERS = env('BENCH_USERS', 100)
const MODEL_DELAY_MS = env('BENCH_MODEL_DELAY_MS', 50)
const MODEL_CHUNKS = env('BENCH_MODEL_CHUNKS', 40)
const MODEL_GAP_MS = env('BENCH_MODEL_GAP_MS', 50)
/** From the request to `[DONE]`: the delay, a gap before each chunk after the first and before the end. */
const ANSWER_MS = MODEL_DELAY_MS + MODEL_CHUNKS * MODEL_GAP_MS
const RATE = env('BENCH_RATE', (STREAMS * 1000) / ANSWER_MS)
const RAMP_S = env('BENCH_RAMP_S', ANSWER_MS / 1000 + 0.5)
const MEASURE_S = env('BENCH_MEASURE_S', 8)
const BURST = env('BENCH_BURST', STREAMS)
const INLINE = process.env.BENCH_CLIENTS === 'inline'
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE
const PASS_THROUGH_P99_TARGET_MS = 5
/** Issue 28: the app's main-thread CPU per support-agent stream (of the default 40 chunks). */
const CPU_PER_STREAM_TARGET_MS = 2
const SIGN_IN_WIDTH = 4
const QUESTION = 'How do credit holds work?'
const MODEL_NAME = 'bench-model'
const SCRIPT: ModelScript = {
  text: Array.from({ length: MODEL_CHUNKS }, (_, i) => `word${i} `),
  delayMs: MODEL_DELAY_MS,
  gapMs: MODEL_GAP_MS,
}
/** The mark each stream's user message carries to the model. */
const MARK = /\[bench (\d+)\]/

// ---------------------------------------------------------------- the clients (child process)

type Side = 'direct' | 'service'

interface Target {
  side: Side
  /** The origin requests go to. */
  origin: string
  path: string
  /** Per stream n: headers[n % headers.length]. */
  headers: Record<string, string>[]
}

/** One stream: ms from its request's start unless said otherwise, null when it never came. */
interface StreamRecord {
  /** Started inside the measured window (steady), or part of the burst. */
  measured: boolean
  status: number
  headersMs: number | null
  firstTextMs: number | null
  /** The first text's arrival minus the model's first chunk for this stream's request. */
  passMs: number | null
  /** No model request carried this stream's mark, or it never wrote a chunk. */
  unmatched: boolean
  done: boolean
  errorChunks: number
  totalMs: number
  /** Streams open when it started, itself included. */
  open: number
  /** How late it started on the schedule. */
  lagMs: number
}

/** The clients' event-loop delay over a measured window, in ms. */
interface ClientWindow {
  eldP50: number
  eldP99: number
  eldMax: number
}

interface PhaseResult {
  records: StreamRecord[]
  client: ClientWindow | null
}

interface SteadySpec {
  ratePerS: number
  rampMs: number
  measureMs: number
}

interface Fleet {
  /** Starts the fake model; answers its base URL (AI_BASE_URL). */
  startModel(): Promise<string>
  /** The open-loop schedule against `target`. */
  steady(target: Target, spec: SteadySpec): Promise<PhaseResult>
  /** `n` streams against `target` at once. */
  burst(target: Target, n: number): Promise<PhaseResult>
  /** How many chat/completions requests the model has had. */
  modelRequests(): Promise<number>
  close(): Promise<void>
}

/** An SSE event's JSON: a UI stream chunk (service) or a chat.completion.chunk (direct). */
interface StreamEvent {
  type?: string
  choices?: { delta?: { content?: string | null } }[]
}

const isText: Record<Side, (event: StreamEvent) => boolean> = {
  service: (event) => event.type === 'text-delta',
  direct: (event) =>
    typeof event.choices?.[0]?.delta?.content === 'string' && event.choices[0].delta.content !== '',
}

/** The body each side's request sends: a useChat message, or what the AI SDK sends the model. */
function bodyFor(side: Side, n: number): string {
  const text = `${QUESTION} [bench ${n}]`
  if (side === 'service') {
    return JSON.stringify({
      id: `chat-${n}`,
      messages: [{ id: `m-${n}`, role: 'user', parts: [{ type: 'text', text }] }],
      trigger: 'submit-message',
    })
  }
  return JSON.stringify({
    model: MODEL_NAME,
    messages: [
      { role: 'system', content: 'You are the support agent of a trading app.' },
      { role: 'user', content: text },
    ],
    stream: true,
    stream_options: { include_usage: true },
  })
}

/** Event-loop delay over a window, in ms: p50, p99, max. */
function loopDelay() {
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  return {
    start: () => {
      histogram.reset()
      histogram.enable()
    },
    stop: () => {
      histogram.disable()
      const ms = (ns: number) => ns / 1e6
      return {
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
      }
    },
  }
}

function createFleet(): Fleet {
  const model = new FakeModel()
  const pools = new Map<string, Pool>()
  let marks = 0
  let open = 0
  const poolFor = (origin: string) => {
    let pool = pools.get(origin)
    if (!pool) {
      pool = new Pool(origin, { connections: 4 * STREAMS, pipelining: 1 })
      pools.set(origin, pool)
    }
    return pool
  }

  // Model requests by their stream's mark, indexed as they are looked for.
  const byMark = new Map<number, ModelRequest>()
  let indexed = 0
  const requestFor = (mark: number) => {
    for (; indexed < model.requests.length; indexed++) {
      const request = model.requests[indexed] as ModelRequest
      const found = MARK.exec(request.raw)
      if (found) byMark.set(Number(found[1]), request)
    }
    const request = byMark.get(mark)
    byMark.delete(mark)
    return request
  }

  /** One stream, read event by event as its bytes arrive; `due` is when the schedule wanted it. */
  async function stream(target: Target, measured: boolean, due: number): Promise<StreamRecord> {
    const mark = marks++
    const headers = target.headers[mark % target.headers.length] as Record<string, string>
    const t0 = performance.now()
    const record: StreamRecord = {
      measured,
      status: 0,
      headersMs: null,
      firstTextMs: null,
      passMs: null,
      unmatched: false,
      done: false,
      errorChunks: 0,
      totalMs: 0,
      open: ++open,
      lagMs: t0 - due,
    }
    const text = isText[target.side]
    let firstTextAt = 0
    try {
      const res = await poolFor(target.origin).request({
        path: target.path,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: bodyFor(target.side, mark),
      })
      record.status = res.statusCode
      record.headersMs = performance.now() - t0
      let buffered = ''
      res.body.setEncoding('utf8')
      for await (const chunk of res.body) {
        const now = performance.now()
        buffered += chunk as string
        let end = buffered.indexOf('\n\n')
        while (end >= 0) {
          const event = buffered.slice(0, end)
          buffered = buffered.slice(end + 2)
          end = buffered.indexOf('\n\n')
          if (!event.startsWith('data: ')) continue
          const data = event.slice(6)
          if (data === '[DONE]') {
            record.done = true
            continue
          }
          const parsed = JSON.parse(data) as StreamEvent
          if (!firstTextAt && text(parsed)) firstTextAt = now
          if (parsed.type === 'error') record.errorChunks++
        }
      }
    } catch {
      record.done = false
    }
    open--
    record.totalMs = performance.now() - t0
    if (firstTextAt) record.firstTextMs = firstTextAt - t0
    const request = requestFor(mark)
    if (request?.firstChunkAt === undefined) record.unmatched = record.status === 200
    else if (firstTextAt) record.passMs = firstTextAt - request.firstChunkAt
    return record
  }

  return {
    async startModel() {
      await model.start()
      model.defaultReply(SCRIPT)
      return model.url
    },

    async steady(target, { ratePerS, rampMs, measureMs }) {
      const every = 1000 / ratePerS
      const count = Math.ceil((rampMs + measureMs) / every)
      const delay = loopDelay()
      let client: ClientWindow | null = null
      const runs: Promise<StreamRecord>[] = []
      const t0 = performance.now()
      await new Promise<void>((resolve) => {
        let k = 0
        let opened = false
        const tick = () => {
          // Every start that is due, however late: the schedule does not wait for the streams.
          while (k < count && t0 + k * every <= performance.now()) {
            const at = k * every
            if (at >= rampMs && !opened) {
              opened = true
              delay.start()
            }
            runs.push(stream(target, at >= rampMs, t0 + at))
            k++
          }
          if (k >= count) {
            const d = delay.stop()
            client = { eldP50: d.p50, eldP99: d.p99, eldMax: d.max }
            return resolve()
          }
          setTimeout(tick, Math.max(0, t0 + k * every - performance.now()))
        }
        tick()
      })
      return { records: await Promise.all(runs), client }
    },

    async burst(target, n) {
      const due = performance.now()
      const records = await Promise.all(Array.from({ length: n }, () => stream(target, true, due)))
      return { records, client: null }
    },

    modelRequests: async () => model.requests.length,

    async close() {
      await Promise.all([...pools.values()].map((pool) => pool.close()))
      await model.stop()
    },
  }
}

// ---------------------------------------------------------------- the app (this process)

/** The app process and the machine over a measured window. */
interface AppWindow {
  eldP50: number
  eldP99: number
  eldMax: number
  wallMs: number
  /** CPU ms of the app, the clients, PostgreSQL (this benchmark's database, and the rest) and all else. */
  cpu: ReturnType<typeof cpuBetween>
  /** The app's main thread alone (where the requests, the AI SDK and the streams run), or null. */
  mainThreadMs: number | null
  /** Garbage-collection pauses of the app's main thread. */
  gc: { count: number; totalMs: number; maxMs: number }
}

/** Starts and stops the app-side window, and the CPU profile if asked for. */
function appWindow(groups: Parameters<typeof cpuBetween>[2], profilePath?: string) {
  const delay = loopDelay()
  let before = cpuSnapshot()
  let mainBefore = mainThreadCpuMs()
  const gc = { count: 0, totalMs: 0, maxMs: 0 }
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count++
      gc.totalMs += entry.duration
      gc.maxMs = Math.max(gc.maxMs, entry.duration)
    }
  })
  let session: Session | null = null
  return {
    async start() {
      if (profilePath) {
        session = new Session()
        session.connect()
        await session.post('Profiler.enable')
        await session.post('Profiler.setSamplingInterval', { interval: 250 })
        await session.post('Profiler.start')
      }
      delay.start()
      before = cpuSnapshot()
      mainBefore = mainThreadCpuMs()
      gcObserver.observe({ entryTypes: ['gc'] })
    },
    async stop(): Promise<{ window: AppWindow; profile: Profile | null }> {
      const after = cpuSnapshot()
      const mainAfter = mainThreadCpuMs()
      gcObserver.disconnect()
      const d = delay.stop()
      const cpu = cpuBetween(before, after, groups)
      const mainThreadMs = mainAfter !== null && mainBefore !== null ? mainAfter - mainBefore : null
      const window: AppWindow = {
        eldP50: d.p50,
        eldP99: d.p99,
        eldMax: d.max,
        wallMs: cpu.wallMs,
        cpu,
        mainThreadMs,
        gc,
      }
      let profile: Profile | null = null
      if (session && profilePath) {
        profile = (await session.post('Profiler.stop')).profile as Profile
        session.disconnect()
        writeFileSync(profilePath, JSON.stringify(profile))
      }
      return { window, profile }
    },
  }
}

interface Profile {
  nodes: {
    id: number
    callFrame: { functionName: string; url: string; lineNumber: number }
    children?: number[]
  }[]
  samples: number[]
  timeDeltas: number[]
}

/** A frame's area: its package, its folder of src/, node's module (web streams, http...) or V8's own. */
function areaOf({ url, functionName }: Profile['nodes'][number]['callFrame']): {
  area: string
  code: boolean
} {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1]
  if (pkg) return { area: pkg, code: true }
  if (url.includes('/src/') || url.includes('/bench/') || url.includes('/test/')) {
    const path = url.replace(/^.*\/(src|bench|test)\//, '$1/')
    return { area: path.split('/').slice(0, -1).join('/'), code: true }
  }
  if (url.startsWith('node:')) {
    // node:internal/webstreams/x -> node webstreams, node:internal/deps/undici/x -> node deps/undici (fetch).
    const [first = '', second = ''] = url.replace(/^node:(internal\/)?/, '').split('/')
    return { area: `node ${first === 'deps' ? `deps/${second}` : first.replace(/^_/, '')}`, code: false }
  }
  return { area: url || (/^\(.*\)$/.test(functionName) ? functionName : '(native)'), code: false }
}

/**
 * Where the app's time went: self time by area, the same charged to the nearest package or src/ frame up
 * the stack (node's web streams, http and GC-free internals counted for whoever called them), and the
 * top functions; as printed lines.
 */
function summarizeProfile(profile: Profile): string[] {
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const self = new Map<number, number>()
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000)
  })
  const areas = new Map<string, number>()
  const askers = new Map<string, number>()
  const functions = new Map<string, number>()
  const add = (map: Map<string, number>, key: string, ms: number) => map.set(key, (map.get(key) ?? 0) + ms)
  let total = 0
  for (const node of profile.nodes) {
    const ms = self.get(node.id) ?? 0
    // The profiler's own time (stopping it, sending the profile) is not the app's.
    if (!ms || node.callFrame.url === 'node:inspector') continue
    total += ms
    const own = areaOf(node.callFrame)
    add(areas, own.area, ms)
    let asker: string | undefined = own.code || own.area.startsWith('(') ? own.area : undefined
    for (let up = parent.get(node.id); asker === undefined && up !== undefined; up = parent.get(up)) {
      const frame = byId.get(up)
      const area = frame ? areaOf(frame.callFrame) : undefined
      if (area?.code) asker = area.area
    }
    add(askers, asker ?? `${own.area} (no package on the stack)`, ms)
    const { url, functionName, lineNumber } = node.callFrame
    const where = url ? `${url.replace(/^.*\/(node_modules|src)\//, '$1/')}:${lineNumber + 1}` : ''
    add(functions, `${functionName || '(anonymous)'} ${where}`.trim(), ms)
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(
        ([name, ms]) =>
          `    ${((100 * ms) / total).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(6)} ms  ${name}`,
      )
  return [
    `  app process CPU profile over the steady service window (${total.toFixed(0)} ms sampled); self time by area:`,
    ...top(areas, 12),
    '  the same, charged to the nearest package or src/ frame up the stack:',
    ...top(askers, 12),
    '  top functions by self time:',
    ...top(functions, 12),
  ]
}

/** What a phase's records come to. */
function figuresOf(records: StreamRecord[], side: Side) {
  const measured = records.filter((r) => r.measured && r.status === 200)
  const values = (pick: (r: StreamRecord) => number | null) =>
    measured
      .map(pick)
      .filter((v): v is number => v !== null)
      .sort((a, b) => a - b)
  const stats = (sorted: number[]) => ({
    n: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? 0,
  })
  const opens = records.filter((r) => r.measured).map((r) => r.open)
  const statuses: Record<string, number> = {}
  for (const r of records) {
    const key = r.status === 0 ? 'no answer' : String(r.status)
    statuses[key] = (statuses[key] ?? 0) + 1
  }
  const errors = {
    notOk: records.filter((r) => r.status !== 200).length,
    noDone: records.filter((r) => !r.done).length,
    errorChunks: records.reduce((n, r) => n + r.errorChunks, 0),
    noText: records.filter((r) => r.status === 200 && r.done && r.firstTextMs === null).length,
    unmatched: records.filter((r) => r.unmatched).length,
  }
  return {
    side,
    streams: records.length,
    measured: measured.length,
    passThrough: {
      ...stats(values((r) => r.passMs)),
      p90: percentile(
        values((r) => r.passMs),
        90,
      ),
      /** Share of the streams over the target, in %. */
      overTargetPct:
        (100 * values((r) => r.passMs).filter((v) => v > PASS_THROUGH_P99_TARGET_MS).length) /
        Math.max(1, measured.length),
    },
    ttft: stats(values((r) => r.firstTextMs)),
    headers: stats(values((r) => r.headersMs)),
    whole: stats(values((r) => r.totalMs)),
    open: {
      mean: opens.length ? opens.reduce((a, b) => a + b, 0) / opens.length : 0,
      max: Math.max(0, ...opens),
    },
    startLag: stats(
      records
        .filter((r) => r.measured)
        .map((r) => r.lagMs)
        .sort((a, b) => a - b),
    ),
    statuses,
    errors: { ...errors, total: Object.values(errors).reduce((a, b) => a + b, 0) },
  }
}
type Figures = ReturnType<typeof figuresOf>

const ms = (n: number) => n.toFixed(1)
const trio = (s: { p50: number; p99: number; max: number }) => `${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.max)}`

async function main() {
  const fleet = INLINE
    ? { ...createFleet(), pid: process.pid, stop() {} }
    : forkFleet<Fleet>(
        fileURLToPath(import.meta.url),
        ['startModel', 'steady', 'burst', 'modelRequests', 'close'],
        { execArgv: [] },
      )
  const started = performance.now()
  const loads: Record<string, string> = { start: load1() }
  try {
    const modelUrl = await fleet.startModel()
    const bench = await startBenchApp('bench_ai', {
      AI_BASE_URL: modelUrl,
      AI_API_KEY: 'sk-bench',
      AI_MODEL: MODEL_NAME,
    })
    try {
      const perUser = (RATE * (RAMP_S + MEASURE_S) + BURST) / USERS
      if (perUser > 50)
        console.warn(`warning: ${perUser.toFixed(0)} streams a user; over 60 a minute answer 429`)
      // USERS users signed in over HTTP (argon2: a few at a time); the agents' throttle is 60 a minute each.
      const http = new Pool(bench.appUrl, { connections: SIGN_IN_WIDTH, pipelining: 1 })
      const users = createUsersService({
        db: bench.database.db,
        clock: systemClock,
        events: createEventBus(),
      })
      const sessions: Record<string, string>[] = new Array(USERS)
      const setupStarted = performance.now()
      await Promise.all(
        Array.from({ length: SIGN_IN_WIDTH }, async (_, worker) => {
          for (let i = worker; i < USERS; i += SIGN_IN_WIDTH) {
            const email = `bench-ai-${i}@example.com`
            await users.create({ name: `Bench ${i}`, email, password: BENCH_PASSWORD, verified: true })
            sessions[i] = await signIn(http, email)
          }
        }),
      )
      await http.close()
      const setupSeconds = (performance.now() - setupStarted) / 1000

      const modelBase = new URL(modelUrl)
      const endpoints: Record<Side, Target> = {
        direct: {
          side: 'direct',
          origin: modelBase.origin,
          path: `${modelBase.pathname}/chat/completions`,
          headers: [{ authorization: 'Bearer sk-bench' }],
        },
        service: {
          side: 'service',
          origin: bench.appUrl,
          path: '/api/ai/agents/support',
          headers: sessions,
        },
      }

      // ---------------------------------------------------------------- the phases
      const database = new URL(bench.databaseUrl).pathname.slice(1)
      const cpuGroups: Parameters<typeof cpuBetween>[2] = {
        app: (pid) => pid === process.pid,
        ...(!INLINE && { clients: (pid: number) => pid === fleet.pid }),
        // A backend's command line names its database: `postgres: user bench_ai_xxx 127.0.0.1(port) idle`.
        postgres: (_, command) => command.startsWith('postgres:') && command.includes(` ${database} `),
        otherPostgres: (_, command) => command.startsWith('postgres') || command.includes('/bin/postgres '),
      }
      const spec: SteadySpec = { ratePerS: RATE, rampMs: RAMP_S * 1000, measureMs: MEASURE_S * 1000 }
      const steady = async (side: Side) => {
        const window = appWindow(cpuGroups, side === 'service' ? CPU_PROFILE : undefined)
        // The app's window follows the clients' by this process's clock (an IPC message apart).
        const opening = setTimeout(() => void window.start(), spec.rampMs)
        let closing: Promise<Awaited<ReturnType<typeof window.stop>>> | undefined
        const closer = setTimeout(() => {
          closing = window.stop()
        }, spec.rampMs + spec.measureMs)
        const result = await fleet.steady(endpoints[side], spec)
        clearTimeout(opening)
        clearTimeout(closer)
        const app = await (closing ?? window.stop())
        loads[`steady ${side}`] = load1()
        return { ...result, app: app.window, profile: app.profile }
      }
      const burst = async (side: Side) => {
        const result = await fleet.burst(endpoints[side], BURST)
        loads[`burst ${side}`] = load1()
        return result
      }
      const steadyDirect = await steady('direct')
      const steadyService = await steady('service')
      const burstDirect = BURST > 0 ? await burst('direct') : null
      const burstService = BURST > 0 ? await burst('service') : null

      const modelRequests = await fleet.modelRequests()
      const calls = (await bench.database.db.execute(
        sql`select status, count(*)::int as n from ai_calls group by status order by status`,
      )) as unknown as { rows: { status: string; n: number }[] }

      // ---------------------------------------------------------------- report
      const phases = {
        steadyDirect: figuresOf(steadyDirect.records, 'direct'),
        steadyService: figuresOf(steadyService.records, 'service'),
        ...(burstDirect && { burstDirect: figuresOf(burstDirect.records, 'direct') }),
        ...(burstService && { burstService: figuresOf(burstService.records, 'service') }),
      }
      const all = Object.values(phases) as Figures[]
      const serviceStreams = all.filter((f) => f.side === 'service').reduce((n, f) => n + f.streams, 0)
      const expectedRequests = all.reduce((n, f) => n + f.streams, 0)
      const aiCalls = Object.fromEntries(calls.rows.map((r) => [r.status, r.n]))
      // Every service stream completed, and nothing else recorded.
      const aiCallErrors =
        Math.abs(serviceStreams - (aiCalls.completed ?? 0)) +
        calls.rows.filter((r) => r.status !== 'completed').reduce((n, r) => n + r.n, 0)
      const errors =
        all.reduce((n, f) => n + f.errors.total, 0) +
        Math.abs(modelRequests - expectedRequests) +
        aiCallErrors
      const headline = phases.steadyService.passThrough
      const met = headline.p99 <= PASS_THROUGH_P99_TARGET_MS
      const cores = availableParallelism()
      const windowOf = (r: typeof steadyService, counted: number) => {
        const { app, client } = r
        const { cpu } = app
        const pct = (cpuMs: number | null | undefined) =>
          cpuMs === null || cpuMs === undefined ? null : (100 * cpuMs) / Math.max(1, cpu.wallMs)
        return {
          seconds: cpu.wallMs / 1000,
          appEventLoopDelay: { p50: app.eldP50, p99: app.eldP99, max: app.eldMax },
          appGc: app.gc,
          clientEventLoopDelay: client
            ? { p50: client.eldP50, p99: client.eldP99, max: client.eldMax }
            : null,
          /** CPU as % of one core (100 = a core the whole window). */
          cpuPctOfCore: {
            app: pct(cpu.groups.app),
            appMainThread: pct(app.mainThreadMs),
            clients: pct(cpu.groups.clients),
            postgres: pct(cpu.groups.postgres),
            otherPostgres: pct(cpu.groups.otherPostgres),
            everythingElse: pct(cpu.other),
          },
          /** How busy all the cores together were (every process). */
          machineBusyPct: cpu.machine ? (100 * cpu.machine.busyMs) / Math.max(1, cpu.machine.totalMs) : null,
          /** The app's CPU (all its threads, its main thread) over the window by the streams started in it. */
          appCpuMsPerStream: (cpu.groups.app ?? 0) / Math.max(1, counted),
          appMainThreadMsPerStream:
            app.mainThreadMs === null ? null : app.mainThreadMs / Math.max(1, counted),
        }
      }
      const windows = {
        steadyDirect: windowOf(steadyDirect, phases.steadyDirect.measured),
        steadyService: windowOf(steadyService, phases.steadyService.measured),
      }

      console.log(
        `AI agent benchmark: POST /api/ai/agents/support (${USERS} signed-in users) against a fake OpenAI-compatible ` +
          `model; model and clients ${INLINE ? 'IN THE APP PROCESS' : 'in a child process'}, the app in this one; ` +
          'PostgreSQL, one app instance',
      )
      console.log(
        `model answer: first chunk after ${MODEL_DELAY_MS} ms, ${MODEL_CHUNKS} chunks ${MODEL_GAP_MS} ms apart, ` +
          `[DONE] ${ANSWER_MS} ms after the request`,
      )
      const m = machine()
      console.log(
        `machine: ${m.cores} x ${m.cpu}, node ${m.node}; load average (1 min) at the start ${loads.start}, ` +
          `after ${Object.entries(loads)
            .slice(1)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')}; setup (${USERS} users signed in) ${setupSeconds.toFixed(1)} s`,
      )
      console.log(
        `steady load: open loop, a stream started every ${ms(1000 / RATE)} ms (${RATE.toFixed(1)}/s) for ` +
          `${RAMP_S.toFixed(1)} s of ramp-up (not counted) + ${MEASURE_S} s measured; burst: ${BURST} streams started at once`,
      )
      console.log('  (ms; p50 / p99 / max)')
      const label: Record<string, string> = {
        steadyDirect: 'steady  direct ',
        steadyService: 'steady  service',
        burstDirect: 'burst   direct ',
        burstService: 'burst   service',
      }
      for (const [key, f] of Object.entries(phases) as [string, Figures][]) {
        console.log(
          `  ${label[key]}  ${String(f.measured).padStart(4)} counted of ${String(f.streams).padStart(4)}   ` +
            `open at start mean ${f.open.mean.toFixed(0)} max ${f.open.max}   ` +
            `pass-through ${trio(f.passThrough)}   TTFT ${trio(f.ttft)}   headers ${trio(f.headers)}   ` +
            `start lag p99 ${ms(f.startLag.p99)}   errors ${f.errors.total}`,
        )
      }
      const core = (n: number | null) => (n === null ? '-' : n.toFixed(0))
      for (const [key, w] of Object.entries(windows)) {
        const c = w.cpuPctOfCore
        console.log(
          `  ${label[key]} window (${w.seconds.toFixed(1)} s): event-loop delay app ${trio(w.appEventLoopDelay)}` +
            (w.clientEventLoopDelay ? `, clients ${trio(w.clientEventLoopDelay)}` : '') +
            `; app GC pauses ${w.appGc.count}, ${w.appGc.totalMs.toFixed(0)} ms in all, longest ${ms(w.appGc.maxMs)}`,
        )
        console.log(
          `      CPU in % of one core: app ${core(c.app)} (main thread ${core(c.appMainThread)}, ` +
            `${ms(w.appMainThreadMsPerStream ?? 0)} ms a stream started), clients ${core(c.clients)}, ` +
            `PostgreSQL ${core(c.postgres)} (+ ${core(c.otherPostgres)} for other databases), ` +
            `everything else ${core(c.everythingElse)}; machine ${core(w.machineBusyPct)}% busy (${cores} cores)`,
        )
      }
      console.log(
        `PASS-THROUGH of the first token, steady load (~${phases.steadyService.open.mean.toFixed(0)} open): the client's ` +
          `first text-delta minus the model's first content chunk of that stream's request (one clock): ` +
          `p50 ${ms(headline.p50)} ms, p90 ${ms(headline.p90)} ms, p99 ${ms(headline.p99)} ms over ${headline.n} streams, ` +
          `${headline.overTargetPct.toFixed(1)}% over ${PASS_THROUGH_P99_TARGET_MS} ms ` +
          `(target p99 <= ${PASS_THROUGH_P99_TARGET_MS} ms: ${met ? 'met' : 'NOT met'}); ` +
          `the method's floor (direct streams): p50 ${ms(phases.steadyDirect.passThrough.p50)} / p99 ${ms(phases.steadyDirect.passThrough.p99)} ms`,
      )
      const added = (a: Figures, b: Figures) =>
        `p50 ${ms(b.ttft.p50 - a.ttft.p50)} ms, p99 ${ms(b.ttft.p99 - a.ttft.p99)} ms`
      console.log(
        `TTFT service - direct, steady: ${added(phases.steadyDirect, phases.steadyService)} ` +
          '(adds the request, session, ai_calls insert and the model request the service makes)',
      )
      if (phases.burstDirect && phases.burstService) {
        console.log(
          `TTFT service - direct, BURST of ${BURST} at once: ${added(phases.burstDirect, phases.burstService)} ` +
            `(mostly the queue the burst makes on the app's one thread); burst pass-through p99 ${ms(phases.burstService.passThrough.p99)} ms`,
        )
      }
      const kinds = all.reduce(
        (sum, f) => {
          for (const [k, v] of Object.entries(f.errors)) sum[k] = (sum[k] ?? 0) + v
          return sum
        },
        {} as Record<string, number>,
      )
      console.log(
        `errors ${errors} (target 0: ${errors === 0 ? 'met' : 'NOT met'}): ${kinds.notOk} answers not 200, ` +
          `${kinds.noDone} without [DONE], ${kinds.errorChunks} error chunks, ${kinds.noText} without text, ` +
          `${kinds.unmatched} not matched with a model request; model requests ${modelRequests} of ${expectedRequests} ` +
          `expected; ai_calls ${
            calls.rows.map((r) => `${r.n} ${r.status}`).join(', ') || 'none'
          } (${serviceStreams} completed expected)`,
      )
      const targets = createTargets()
      targets.check(
        `ai-cpu-per-${MODEL_CHUNKS}-chunk-stream`,
        windows.steadyService.appMainThreadMsPerStream ?? Number.NaN,
        '<=',
        CPU_PER_STREAM_TARGET_MS,
        { label: 'main thread', unit: ' ms' },
      )
      targets.check('ai-pass-through-p99', headline.p99, '<=', PASS_THROUGH_P99_TARGET_MS, {
        label: 'p99',
        unit: ' ms',
        digits: 1,
      })
      if (steadyService.profile) {
        for (const line of summarizeProfile(steadyService.profile)) console.log(line)
        console.log(`  profile written to ${CPU_PROFILE} (the profiler's cost is in this run's figures)`)
      }
      const json = writeBenchJson('ai', {
        config: {
          streams: STREAMS,
          users: USERS,
          modelDelayMs: MODEL_DELAY_MS,
          modelChunks: MODEL_CHUNKS,
          modelGapMs: MODEL_GAP_MS,
          ratePerS: RATE,
          rampS: RAMP_S,
          measureS: MEASURE_S,
          burst: BURST,
          clients: INLINE ? 'inline' : 'child process',
          profiled: Boolean(CPU_PROFILE),
        },
        headline: {
          passThroughP50Ms: headline.p50,
          passThroughP99Ms: headline.p99,
          targetP99Ms: PASS_THROUGH_P99_TARGET_MS,
          met,
          errors,
        },
        phases,
        windows,
        loads,
        modelRequests: { got: modelRequests, expected: expectedRequests },
        aiCalls,
        seconds: (performance.now() - started) / 1000,
        targets: targets.results,
      })
      if (json) console.log(`figures written to ${json}`)
      console.log(`run took ${((performance.now() - started) / 1000).toFixed(1)} s`)
      if (errors > 0) process.exitCode = 1
    } finally {
      await bench.close()
    }
  } finally {
    await fleet.close().catch(() => {})
    fleet.stop()
  }
}

if (process.argv.includes('--fleet')) serveFleet(createFleet)
else await main()
