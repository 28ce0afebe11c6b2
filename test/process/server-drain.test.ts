import { randomBytes } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import { isDeepStrictEqual } from 'node:util'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { INTERRUPTED_TEXT } from '../../src/modules/ai/agents/agents.service.ts'
import { type AgentAnswer, askAgent, userMessage } from '../helpers/ai-chat.ts'
import { SPA_ORIGIN, TEST_APP_KEY } from '../helpers/build-test-app.ts'
import { TestClient } from '../helpers/client.ts'
import { uniqueEmail } from '../helpers/factories.ts'
import { FakeModel } from '../helpers/fake-model.ts'
import { PusherSocket } from '../helpers/pusher-socket.ts'
import {
  killServerProcesses,
  migratedDataDir,
  removeTempDirs,
  startServerProcess,
} from '../helpers/server-process.ts'

// A stop under load, as a rolling restart behind nginx sees it: the real process, real sockets,
// SIGTERM. The instance must answer /up 503 at once, keep serving (each answer closing its
// connection) through the grace period, then refuse connections; let its sockets and AI streams go
// cleanly; and exit 0 in time.

const GRACE_MS = 1_500
const TIMEOUT_MS = 15_000
const DRAIN_SECONDS = 1
const APP_KEY = `key-${randomBytes(6).toString('hex')}`
const LOAD_CLIENTS = 4

const model = new FakeModel()
// One data folder for the file, a copy of the run's migrated database: no start runs initdb.
let dataDir: string | undefined

async function start(env: Record<string, string>) {
  dataDir ??= migratedDataDir()
  if (!model.url) await model.start()
  return startServerProcess({
    env: {
      DATA_DIR: dataDir,
      APP_KEY: TEST_APP_KEY,
      REVERB_APP_ID: 'drain-app',
      REVERB_APP_KEY: APP_KEY,
      REVERB_APP_SECRET: randomBytes(24).toString('hex'),
      REVERB_DRAIN_SECONDS: String(DRAIN_SECONDS),
      AI_BASE_URL: model.url,
      AI_API_KEY: 'sk-drain-test',
      AI_MODEL: 'fake-drain-model',
      ...env,
    },
  })
}

afterEach(() => killServerProcesses())
afterAll(async () => {
  await model.stop()
  // After the last test only: the data folder is shared by the file's tests.
  removeTempDirs()
})

/** What became of one request of the load. */
type Outcome =
  | { kind: 'answered'; status: number; connection: string | undefined; body: unknown }
  | {
      kind: 'failed'
      code: string | undefined
      syscall: string | undefined
      message: string
      reused: boolean
    }

interface Sent {
  what: string
  startedAt: number
  endedAt: number
  outcome: Outcome
  expected: (body: unknown) => boolean
}

/** One request on `agent` (a kept-alive connection of its own), with the session of `client`, as the SPA sends it. */
function send(
  agent: http.Agent,
  port: number,
  client: TestClient,
  method: string,
  path: string,
  body?: unknown,
) {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  const headers: Record<string, string> = {
    accept: 'application/json',
    origin: SPA_ORIGIN,
    referer: `${SPA_ORIGIN}/`,
    'x-requested-with': 'XMLHttpRequest',
    cookie: client.cookieHeader,
  }
  if (payload !== undefined) {
    headers['content-type'] = 'application/json'
    headers['content-length'] = String(Buffer.byteLength(payload))
    headers['x-xsrf-token'] = decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? '')
  }
  return new Promise<Outcome>((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        text += chunk
      })
      res.on('end', () =>
        resolve({
          kind: 'answered',
          status: res.statusCode ?? 0,
          connection: res.headers.connection,
          body: text ? JSON.parse(text) : null,
        }),
      )
      res.on('error', (error: NodeJS.ErrnoException) =>
        resolve({
          kind: 'failed',
          code: error.code,
          syscall: error.syscall,
          message: error.message,
          reused: true,
        }),
      )
    })
    req.on('error', (error: NodeJS.ErrnoException) =>
      resolve({
        kind: 'failed',
        code: error.code,
        syscall: error.syscall,
        message: error.message,
        reused: req.reusedSocket,
      }),
    )
    req.end(payload)
  })
}

/**
 * Signed-in reads and writes in a loop on one kept-alive connection, until a connect is refused:
 * the listener is gone. Each write's answer must echo what was written, each read the user.
 */
async function loadLoop(port: number, client: TestClient, userId: number, log: Sent[], until: () => boolean) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    for (let i = 0; !until(); i++) {
      const write = i % 2 === 0
      const document = { counter: i, note: `load ${userId}` }
      const startedAt = Date.now()
      const outcome = write
        ? await send(agent, port, client, 'POST', '/api/user/preferences', document)
        : await send(agent, port, client, 'GET', '/api/user')
      log.push({
        what: write ? 'POST /api/user/preferences' : 'GET /api/user',
        startedAt,
        endedAt: Date.now(),
        outcome,
        expected: write
          ? (body) => isDeepStrictEqual(body, document)
          : (body) => (body as { id?: number } | null)?.id === userId,
      })
      if (outcome.kind === 'failed' && outcome.code === 'ECONNREFUSED') return
    }
  } finally {
    agent.destroy()
  }
}

/** GET /up on a connection of its own (never one the load keeps alive). */
function probeUp(port: number) {
  return new Promise<{ status: number; body: unknown } | { refused: true }>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/up', agent: false }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString()
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
    })
    req.on('error', () => resolve({ refused: true }))
  })
}

async function registered(baseUrl: string, name: string) {
  const client = new TestClient(baseUrl)
  const password = 'correct horse battery staple'
  const res = await client.post('/api/register', {
    name,
    email: uniqueEmail('drain'),
    password,
    password_confirmation: password,
  })
  if (res.status !== 201) throw new Error(`register answered ${res.status} ${res.text}`)
  return { client, userId: res.data.id as number }
}

describe('node src/server.ts stopping under load (SIGTERM)', () => {
  it('answers /up 503 at once, serves through the grace period, then refuses; lets sockets and AI streams go cleanly; exits 0', async () => {
    const server = await start({
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
      SHUTDOWN_TIMEOUT_MS: String(TIMEOUT_MS),
    })
    const users = await Promise.all(
      Array.from({ length: LOAD_CLIENTS }, (_, i) => registered(server.baseUrl, `Drain Trader ${i}`)),
    )

    // An open real-time socket, and an AI answer the model is slow to give (a word, then a long pause).
    const socket = await PusherSocket.open(server.baseUrl, APP_KEY)
    model.reply({ text: ['Let me think', ' about that.'], gapMs: 30_000 })
    let streamEndedAt = 0
    let heardFirstWord: () => void = () => {}
    const firstWord = new Promise<void>((resolve) => {
      heardFirstWord = resolve
    })
    const answer: Promise<AgentAnswer> = askAgent(
      users[0]?.client as TestClient,
      'support',
      [userMessage('How do credit holds work?')],
      {
        onChunk: (chunk) => {
          if (chunk.type === 'text-delta') heardFirstWord()
        },
      },
    ).finally(() => {
      streamEndedAt = Date.now()
    })
    await Promise.race([firstWord, answer.then(() => Promise.reject(new Error('answered before the stop')))])

    // Steady load, then the signal while it runs.
    const sent: Sent[] = []
    let stopLoad = false
    const loops = users.map(({ client, userId }) =>
      loadLoop(server.port, client, userId, sent, () => stopLoad),
    )
    await new Promise((resolve) => setTimeout(resolve, 300))
    const answeredBefore = sent.filter((s) => s.outcome.kind === 'answered').length
    const signalledAt = Date.now()
    server.child.kill('SIGTERM')

    // /up: 503 right after the signal (the first probe that is not 200 is a 503, within a moment).
    let up = await probeUp(server.port)
    while ('status' in up && up.status === 200 && Date.now() - signalledAt < 1_000)
      up = await probeUp(server.port)
    const stoppingAt = Date.now()
    expect(up).toMatchObject({ status: 503, body: { status: 'stopping' } })
    expect(stoppingAt - signalledAt).toBeLessThan(1_000)
    // A socket opened now is turned away with the same reconnect code.
    const late = new PusherSocket(server.baseUrl, APP_KEY)

    const deadline = setTimeout(() => {
      stopLoad = true
    }, TIMEOUT_MS)
    await Promise.all(loops)
    clearTimeout(deadline)
    const exit = await server.exited
    const exitedAfterMs = Date.now() - signalledAt

    // Exit 0, well within SHUTDOWN_TIMEOUT_MS.
    expect(exit).toEqual({ code: 0, signal: null })
    expect(exitedAfterMs).toBeLessThan(TIMEOUT_MS)
    const lines = server.logLines()
    const listenerClosing = lines.find((line) => String(line.msg).startsWith('stopping: grace period over'))
    expect(listenerClosing, server.stdout()).toBeDefined()
    const listenerClosedAt = Number(listenerClosing?.time)
    expect(lines.filter((line) => Number(line.level) >= 50)).toEqual([])

    // Every loop ended on a refused connect, after the grace period (not before).
    const refused = sent.filter((s) => s.outcome.kind === 'failed' && s.outcome.code === 'ECONNREFUSED')
    expect(refused).toHaveLength(LOAD_CLIENTS)
    const firstRefusedAt = Math.min(...refused.map((s) => s.endedAt))
    expect(firstRefusedAt - signalledAt).toBeGreaterThanOrEqual(GRACE_MS - 100)
    expect(listenerClosedAt - signalledAt).toBeGreaterThanOrEqual(GRACE_MS - 100)

    // A connection the kernel had completed but the instance not yet accepted when the listener
    // closed is reset by the kernel (no answer, an RST at connect or at the first read, a fresh
    // connection, just after the close): it never reached the service, as a refused one never
    // does. Anything else that did not get its normal answer is a failure.
    const resetUnaccepted = (s: Sent) =>
      s.outcome.kind === 'failed' &&
      s.outcome.code === 'ECONNRESET' &&
      (s.outcome.syscall === 'read' || s.outcome.syscall === 'connect') &&
      !s.outcome.reused &&
      s.endedAt >= listenerClosedAt &&
      s.endedAt <= listenerClosedAt + 2_000
    const failures = sent.filter(
      (s) =>
        !(s.outcome.kind === 'failed' && s.outcome.code === 'ECONNREFUSED') &&
        !resetUnaccepted(s) &&
        !(s.outcome.kind === 'answered' && s.outcome.status === 200 && s.expected(s.outcome.body)),
    )
    expect(failures.map((s) => ({ what: s.what, at: s.endedAt - signalledAt, outcome: s.outcome }))).toEqual(
      [],
    )
    expect(sent.filter(resetUnaccepted).length).toBeLessThanOrEqual(LOAD_CLIENTS)

    // Requests went on being served during the grace period, each answer closing its connection.
    const duringGrace = sent.filter((s) => s.startedAt > stoppingAt && s.endedAt < listenerClosedAt)
    expect(answeredBefore).toBeGreaterThan(0)
    expect(duringGrace.length).toBeGreaterThanOrEqual(LOAD_CLIENTS)
    for (const s of duringGrace)
      expect(s.outcome).toMatchObject({ kind: 'answered', status: 200, connection: 'close' })

    // The socket was let go with a code pusher-js reconnects on (4100-4199 after a pause, 4200-4299
    // at once), within the drain time; the one opened while draining got the same.
    const closed = await socket.closed
    expect(closed.code).toBeGreaterThanOrEqual(4100)
    expect(closed.code).toBeLessThanOrEqual(4299)
    expect(closed.at - signalledAt).toBeLessThanOrEqual(DRAIN_SECONDS * 1_000 + 500)
    expect((await late.closed).code).toBe(closed.code)

    // The AI answer ended cleanly once the grace period was over: an error part, then finish, as
    // the `ai` client parses them (no cut stream), and the model call was cut off.
    const ended = await answer
    expect(ended.chunks.slice(-2)).toEqual([
      { type: 'error', errorText: INTERRUPTED_TEXT },
      { type: 'finish' },
    ])
    expect(ended.text).toBe('Let me think')
    expect(streamEndedAt).toBeGreaterThanOrEqual(listenerClosedAt)
    expect(model.requests[0]?.aborted).toBe(true)
  }, 180_000)

  it('gives up after SHUTDOWN_TIMEOUT_MS when a request never finishes: an error line, exit 1', async () => {
    const server = await start({ SHUTDOWN_GRACE_MS: '0', SHUTDOWN_TIMEOUT_MS: '1500' })
    // A request whose body never comes: the close waits for it.
    const held = net.connect(server.port, '127.0.0.1')
    await new Promise((resolve) => held.once('connect', resolve))
    held.write(
      'POST /api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"em',
    )
    held.on('error', () => {})
    await new Promise((resolve) => setTimeout(resolve, 200))

    const signalledAt = Date.now()
    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 1, signal: null })
    const tookMs = Date.now() - signalledAt
    expect(tookMs).toBeGreaterThanOrEqual(1_400)
    expect(tookMs).toBeLessThan(5_000)
    const errors = server.logLines().filter((line) => line.level === 50)
    expect(errors).toMatchObject([
      { msg: 'the stop did not finish within SHUTDOWN_TIMEOUT_MS; exiting', timeoutMs: 1500 },
    ])
    held.destroy()
  }, 120_000)
})
