import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type SQL, sql } from 'drizzle-orm'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/client.ts'
import { SPA_ORIGIN, TEST_APP_KEY } from '../helpers/build-test-app.ts'
import { TestClient } from '../helpers/client.ts'
import { uniqueEmail } from '../helpers/factories.ts'
import { freePort } from '../helpers/ports.ts'
import { createServerDatabase } from '../helpers/test-database.ts'

// The service as `npm start` runs it: a real Node 24 process, real sockets, real signals.
const root = fileURLToPath(new URL('../..', import.meta.url))
const nodeBin = join(root, 'node_modules/.bin/node')
const serverEntry = join(root, 'src/server.ts')
const migrationCount = () =>
  (JSON.parse(readFileSync(join(root, 'drizzle/meta/_journal.json'), 'utf8')) as { entries: unknown[] })
    .entries.length

// PGlite's first start in a new folder runs initdb: seconds, more on a busy machine.
const START_DEADLINE_MS = 90_000
const PROCESS_TEST_TIMEOUT = 240_000

interface ServerProcess {
  child: ChildProcess
  port: number
  baseUrl: string
  /** stdout and stderr so far, for assertions and for failure messages. */
  stdout(): string
  stderr(): string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const running = new Set<ServerProcess>()
const tempDirs: string[] = []

afterEach(async () => {
  // A failed test must not leave its server behind: kill exactly the processes this file started.
  for (const server of running) {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await server.exited
  }
  running.clear()
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-process-'))
  tempDirs.push(dir)
  return dir
}

/**
 * Spawns `node src/server.ts` with only the given environment (no DATABASE_URL, APP_KEY or .env
 * leaking in from the test runner: the working directory is a fresh temp folder).
 */
async function spawnServer(env: Record<string, string>): Promise<ServerProcess> {
  const port = env.PORT && /^\d+$/.test(env.PORT) ? Number(env.PORT) : await freePort()
  const child = spawn(nodeBin, [serverEntry], {
    cwd: tempDir(),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      FRONTEND_URL: SPA_ORIGIN,
      LOG_LEVEL: 'info',
      // No grace period at a stop: nothing here balances load, and each stop would wait it out.
      SHUTDOWN_GRACE_MS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const server: ServerProcess = {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
  }
  running.add(server)
  return server
}

/** Spawns the server and waits until GET /up answers 200. */
async function startServer(env: Record<string, string>): Promise<ServerProcess> {
  const server = await spawnServer(env)
  const deadline = Date.now() + START_DEADLINE_MS
  let exit: { code: number | null } | undefined
  void server.exited.then((result) => {
    exit = result
  })
  while (Date.now() < deadline && !exit) {
    try {
      const res = await fetch(`${server.baseUrl}/up`)
      if (res.status === 200) return server
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(
    `server did not answer /up (${exit ? `exited with ${exit.code}` : 'timed out'})\n` +
      `stdout:\n${server.stdout()}\nstderr:\n${server.stderr()}`,
  )
}

/** SIGTERM and the exit that follows. */
async function stopServer(server: ServerProcess) {
  server.child.kill('SIGTERM')
  const result = await server.exited
  running.delete(server)
  return result
}

/** Resolves true once a new TCP connection to the port is refused (the listener is gone). */
async function connectionRefused(port: number, deadlineMs: number): Promise<boolean> {
  const deadline = Date.now() + deadlineMs
  while (Date.now() < deadline) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(false)
      })
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
    })
    if (refused) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

function registration(email = uniqueEmail('process')) {
  const password = 'correct horse battery staple'
  return { name: 'Process Trader', email, password, password_confirmation: password }
}

/** The JSON log lines the process wrote (LOG_LEVEL=info). */
function logLines(server: ServerProcess): Record<string, unknown>[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

describe('node src/server.ts on embedded PGlite under DATA_DIR', () => {
  it(
    'starts on a fresh DATA_DIR (initdb, migrations), answers /up, and keeps a registered user across a restart',
    async () => {
      const dataDir = tempDir()
      const env = { DATA_DIR: dataDir, APP_KEY: TEST_APP_KEY }

      const first = await startServer(env)
      const up = await fetch(`${first.baseUrl}/up`)
      expect(up.status).toBe(200)
      expect(await up.json()).toEqual({ status: 'ok' })

      const account = registration()
      const client = new TestClient(first.baseUrl)
      await client.csrf()
      const registered = await client.post('/api/register', account)
      expect(registered.status, registered.text).toBe(201)
      expect(registered.data.email).toBe(account.email)
      const me = await client.get('/api/user')
      expect(me.status).toBe(200)
      expect(me.data.id).toBe(registered.data.id)

      expect(await stopServer(first)).toEqual({ code: 0, signal: null })
      // The real logger: JSON lines, one access line per request labelled with its id, every one
      // written out by the time the process has exited (they are written in batches); no deprecation warnings.
      const requestLines = logLines(first).filter((line) => line.msg === 'request completed')
      expect(requestLines.map((line) => `${line.method} ${line.url} ${line.status}`)).toEqual(
        expect.arrayContaining(['GET /up 200', 'POST /api/register 201', 'GET /api/user 200']),
      )
      for (const line of requestLines) expect(line.request_id).toEqual(expect.any(String))
      expect(first.stderr()).not.toContain('FSTDEP')
      // APP_KEY came from the environment, so no key file was generated.
      expect(existsSync(join(dataDir, 'app-key'))).toBe(false)

      const second = await startServer(env)
      const returning = new TestClient(second.baseUrl)
      const login = await returning.post('/api/login', { email: account.email, password: account.password })
      expect(login.status, login.text).toBe(200)
      expect(login.data).toEqual({ two_factor: false })
      const again = await returning.get('/api/user')
      expect(again.status).toBe(200)
      expect(again.data).toMatchObject({ id: registered.data.id, email: account.email })
      expect(await stopServer(second)).toEqual({ code: 0, signal: null })

      // The data lives in DATA_DIR/db: every committed migration applied once, the user stored.
      const database = await openDatabase({ dataDir: join(dataDir, 'db') })
      try {
        const rows = async (query: SQL) => ((await database.db.execute(query)) as { rows: unknown[] }).rows
        expect(await rows(sql`select count(*)::int as n from drizzle.__drizzle_migrations`)).toEqual([
          { n: migrationCount() },
        ])
        expect(await rows(sql`select email from users`)).toEqual([{ email: account.email }])
      } finally {
        await database.close()
      }
    },
    PROCESS_TEST_TIMEOUT,
  )

  it(
    'without APP_KEY generates DATA_DIR/app-key on first start and reuses it on the next',
    async () => {
      const dataDir = tempDir()
      const env = { DATA_DIR: dataDir }

      const first = await startServer(env)
      const keyFile = join(dataDir, 'app-key')
      const key = readFileSync(keyFile, 'utf8')
      expect(key).toMatch(/^base64:[A-Za-z0-9+/]{43}=\n$/)
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      const keyWritten = statSync(keyFile).mtimeMs

      const account = registration()
      const client = new TestClient(first.baseUrl)
      const registered = await client.post('/api/register', account)
      expect(registered.status, registered.text).toBe(201)
      expect(await stopServer(first)).toEqual({ code: 0, signal: null })

      const second = await startServer(env)
      expect(readFileSync(keyFile, 'utf8')).toBe(key)
      expect(statSync(keyFile).mtimeMs).toBe(keyWritten)
      // The session cookie from before the restart is still signed in, and the password still works.
      const sameBrowser = new TestClient(second.baseUrl)
      for (const [name, value] of client.cookies) sameBrowser.cookies.set(name, value)
      const resumed = await sameBrowser.get('/api/user')
      expect(resumed.status, resumed.text).toBe(200)
      expect(resumed.data.email).toBe(account.email)
      const fresh = new TestClient(second.baseUrl)
      const login = await fresh.post('/api/login', { email: account.email, password: account.password })
      expect(login.status, login.text).toBe(200)
      expect(await stopServer(second)).toEqual({ code: 0, signal: null })
    },
    PROCESS_TEST_TIMEOUT,
  )

  it(
    'on SIGTERM finishes the request in flight, refuses new connections, and exits 0',
    async () => {
      const server = await startServer({ DATA_DIR: tempDir(), APP_KEY: TEST_APP_KEY })
      const client = new TestClient(server.baseUrl)
      await client.csrf()
      const account = registration()
      const body = Buffer.from(JSON.stringify(account))
      const half = Math.floor(body.length / 2)

      // A raw POST on its own connection; Expect: 100-continue tells us when the server holds the request.
      const request = http.request({
        host: '127.0.0.1',
        port: server.port,
        method: 'POST',
        path: '/api/register',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': String(body.length),
          accept: 'application/json',
          origin: SPA_ORIGIN,
          cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
          'x-xsrf-token': decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? ''),
          expect: '100-continue',
        },
      })
      const answer = new Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }>(
        (resolve, reject) => {
          request.once('error', reject)
          request.once('response', (res) => {
            let text = ''
            res.setEncoding('utf8')
            res.on('data', (chunk: string) => {
              text += chunk
            })
            res.once('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }))
          })
        },
      )
      let answered = false
      void answer.then(
        () => {
          answered = true
        },
        () => {},
      )
      await new Promise<void>((resolve) => request.once('continue', resolve))
      request.write(body.subarray(0, half))

      server.child.kill('SIGTERM')
      // The listener closes while the half-sent request is still open...
      expect(await connectionRefused(server.port, 10_000)).toBe(true)
      expect(answered).toBe(false)
      expect(server.child.exitCode).toBeNull()

      // ...and the request, once complete, is served in full on the still-open database.
      request.end(body.subarray(half))
      const res = await answer
      expect(res.status, res.text).toBe(201)
      expect(JSON.parse(res.text)).toMatchObject({ email: account.email, name: account.name })

      expect(await server.exited).toEqual({ code: 0, signal: null })
      running.delete(server)
      expect(await connectionRefused(server.port, 1_000)).toBe(true)
      const messages = logLines(server).map((line) => line.msg)
      expect(messages).toContain('stopping: finishing in-flight requests')
    },
    PROCESS_TEST_TIMEOUT,
  )
})

describe('node src/server.ts without UPSTREAM_BASE_URL', () => {
  it(
    'runs the upstream simulator in-process, logs its URL, and serves GET /api/markets from it',
    async () => {
      const server = await startServer({ DATA_DIR: tempDir(), APP_KEY: TEST_APP_KEY })
      const line = logLines(server).find((l) => String(l.msg).startsWith('upstream simulator running at '))
      expect(line, server.stdout()).toBeDefined()
      const url = String(line?.url)
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(line?.msg).toBe(`upstream simulator running at ${url}`)
      // It is the simulator, and it checks the bearer token (a one-off one here, never logged).
      const direct = await fetch(`${url}/markets`)
      expect(direct.status).toBe(401)
      expect(await direct.json()).toEqual({ message: 'Unauthenticated.' })

      const client = new TestClient(server.baseUrl)
      expect((await client.post('/api/register', registration())).status).toBe(201)
      const markets = await client.get('/api/markets')
      expect(markets.status, markets.text).toBe(200)
      expect(markets.data.map((m: { id: string }) => m.id)).toEqual(['US', 'EU', 'JP', 'CRYPTO', 'FX'])

      expect(await stopServer(server)).toEqual({ code: 0, signal: null })
      expect(await connectionRefused(Number(new URL(url).port), 1_000)).toBe(true)
    },
    PROCESS_TEST_TIMEOUT,
  )
})

describe('node src/server.ts with a bad environment', () => {
  it('PORT=abc exits 1 with a message naming PORT', async () => {
    const server = await spawnServer({ DATA_DIR: tempDir(), APP_KEY: TEST_APP_KEY, PORT: 'abc' })
    expect(await server.exited).toEqual({ code: 1, signal: null })
    expect(server.stderr()).toContain('Invalid configuration')
    expect(server.stderr()).toMatch(/^ {2}- PORT: /m)
  })

  it('NODE_ENV=production without APP_KEY exits 1 with a message naming APP_KEY', async () => {
    const dataDir = tempDir()
    const server = await spawnServer({ NODE_ENV: 'production', DATA_DIR: dataDir })
    expect(await server.exited).toEqual({ code: 1, signal: null })
    expect(server.stderr()).toMatch(/^ {2}- APP_KEY: required when NODE_ENV=production/m)
    // It stopped before touching anything: no key generated, no database created.
    expect(existsSync(join(dataDir, 'app-key'))).toBe(false)
    expect(existsSync(join(dataDir, 'reverb-app.json'))).toBe(false)
    expect(existsSync(join(dataDir, 'db'))).toBe(false)
    expect(server.stderr()).toMatch(/^ {2}- REVERB_APP_SECRET: required when NODE_ENV=production/m)
  })
  it('NODE_ENV=production without UPSTREAM_BASE_URL exits 1 with a message naming it', async () => {
    const server = await spawnServer({ NODE_ENV: 'production', DATA_DIR: tempDir(), APP_KEY: TEST_APP_KEY })
    expect(await server.exited).toEqual({ code: 1, signal: null })
    expect(server.stderr()).toMatch(/^ {2}- UPSTREAM_BASE_URL: required when NODE_ENV=production/m)
    expect(server.stdout()).not.toContain('upstream simulator')
  })
})

// Against the PostgreSQL server of TEST_DATABASE_URL (CI's second run): a brand-new database.
const postgresServerUrl = process.env.TEST_DATABASE_URL
const postgresCases = postgresServerUrl ? [postgresServerUrl] : []
describe.each(postgresCases)('node src/server.ts on PostgreSQL (DATABASE_URL)', (serverUrl) => {
  it(
    'migrates a fresh database at start, answers /up and serves registration',
    async () => {
      const target = await createServerDatabase(serverUrl)
      try {
        const dataDir = tempDir()
        const server = await startServer({
          DATA_DIR: dataDir,
          APP_KEY: TEST_APP_KEY,
          DATABASE_URL: target.url,
        })
        const up = await fetch(`${server.baseUrl}/up`)
        expect(up.status).toBe(200)
        expect(await up.json()).toEqual({ status: 'ok' })
        const account = registration()
        const registered = await new TestClient(server.baseUrl).post('/api/register', account)
        expect(registered.status, registered.text).toBe(201)
        expect(await stopServer(server)).toEqual({ code: 0, signal: null })
        // PostgreSQL, not PGlite, holds the data.
        expect(existsSync(join(dataDir, 'db'))).toBe(false)
        const check = new pg.Client({ connectionString: target.url })
        await check.connect()
        try {
          const migrations = await check.query('select count(*)::int as n from drizzle.__drizzle_migrations')
          expect(migrations.rows[0]).toEqual({ n: migrationCount() })
          const stored = await check.query('select email from users')
          expect(stored.rows).toEqual([{ email: account.email }])
        } finally {
          await check.end()
        }
      } finally {
        await target.drop()
      }
    },
    PROCESS_TEST_TIMEOUT,
  )
})
