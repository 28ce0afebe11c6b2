import { existsSync, readFileSync, statSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { join } from 'node:path'
import { type SQL, sql } from 'drizzle-orm'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/db/client.ts'
import { SPA_ORIGIN, TEST_APP_KEY } from '../helpers/build-test-app.ts'
import { TestClient } from '../helpers/client.ts'
import { uniqueEmail } from '../helpers/factories.ts'
import { projectRoot } from '../helpers/project-root.ts'
import {
  killServerProcesses,
  makeTempDir,
  migratedDataDir,
  removeTempDirs,
  spawnServerProcess,
  startServerProcess,
} from '../helpers/server-process.ts'
import { createServerDatabase } from '../helpers/test-database.ts'

const migrationCount = () =>
  (
    JSON.parse(readFileSync(join(projectRoot, 'drizzle/meta/_journal.json'), 'utf8')) as {
      entries: unknown[]
    }
  ).entries.length

const PROCESS_TEST_TIMEOUT = 240_000

afterEach(async () => {
  await killServerProcesses()
  removeTempDirs()
})

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

describe('node src/server.ts on embedded PGlite under DATA_DIR', () => {
  it(
    'starts on a fresh DATA_DIR (initdb, migrations), answers /up, and keeps a registered user across a restart',
    async () => {
      const dataDir = makeTempDir()
      const env = { DATA_DIR: dataDir, APP_KEY: TEST_APP_KEY }

      const first = await startServerProcess({ env })
      const up = await fetch(`${first.baseUrl}/up`)
      expect(up.status).toBe(200)
      expect(await up.json()).toMatchObject({ status: 'ok', dependencies: { database: { up: true } } })

      const account = registration()
      const client = new TestClient(first.baseUrl)
      await client.csrf()
      const registered = await client.post('/api/register', account)
      expect(registered.status, registered.text).toBe(201)
      expect(registered.data.email).toBe(account.email)
      const me = await client.get('/api/user')
      expect(me.status).toBe(200)
      expect(me.data.id).toBe(registered.data.id)

      expect(await first.stop()).toEqual({ code: 0, signal: null })
      // The real logger: JSON lines, one access line per request labelled with its id, every one
      // written out by the time the process has exited (they are written in batches); no deprecation warnings.
      const requestLines = first.logLines().filter((line) => line.msg === 'request completed')
      expect(requestLines.map((line) => `${line.method} ${line.url} ${line.status}`)).toEqual(
        expect.arrayContaining(['GET /up 200', 'POST /api/register 201', 'GET /api/user 200']),
      )
      for (const line of requestLines) expect(line.request_id).toEqual(expect.any(String))
      expect(first.stderr()).not.toContain('FSTDEP')
      // APP_KEY came from the environment, so no key file was generated.
      expect(existsSync(join(dataDir, 'app-key'))).toBe(false)

      const second = await startServerProcess({ env })
      const returning = new TestClient(second.baseUrl)
      const login = await returning.post('/api/login', { email: account.email, password: account.password })
      expect(login.status, login.text).toBe(200)
      expect(login.data).toEqual({ two_factor: false })
      const again = await returning.get('/api/user')
      expect(again.status).toBe(200)
      expect(again.data).toMatchObject({ id: registered.data.id, email: account.email })
      expect(await second.stop()).toEqual({ code: 0, signal: null })

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
      const dataDir = migratedDataDir()
      const env = { DATA_DIR: dataDir }

      const first = await startServerProcess({ env })
      const keyFile = join(dataDir, 'app-key')
      const key = readFileSync(keyFile, 'utf8')
      expect(key).toMatch(/^base64:[A-Za-z0-9+/]{43}=\n$/)
      expect(statSync(keyFile).mode & 0o777).toBe(0o600)
      const keyWritten = statSync(keyFile).mtimeMs

      const account = registration()
      const client = new TestClient(first.baseUrl)
      const registered = await client.post('/api/register', account)
      expect(registered.status, registered.text).toBe(201)
      expect(await first.stop()).toEqual({ code: 0, signal: null })

      const second = await startServerProcess({ env })
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
      expect(await second.stop()).toEqual({ code: 0, signal: null })
    },
    PROCESS_TEST_TIMEOUT,
  )

  it(
    'on SIGTERM finishes the request in flight, refuses new connections, and exits 0',
    async () => {
      const server = await startServerProcess({ env: { DATA_DIR: migratedDataDir(), APP_KEY: TEST_APP_KEY } })
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
          cookie: client.cookieHeader,
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
      expect(await connectionRefused(server.port, 1_000)).toBe(true)
      const messages = server.logLines().map((line) => line.msg)
      expect(messages).toContain('stopping: finishing in-flight requests')
    },
    PROCESS_TEST_TIMEOUT,
  )
})

describe('node src/server.ts without UPSTREAM_BASE_URL', () => {
  it(
    'runs the upstream simulator in-process, logs its URL, and serves GET /api/markets from it',
    async () => {
      const server = await startServerProcess({ env: { DATA_DIR: migratedDataDir(), APP_KEY: TEST_APP_KEY } })
      const line = server.logLines().find((l) => String(l.msg).startsWith('upstream simulator running at '))
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

      expect(await server.stop()).toEqual({ code: 0, signal: null })
      expect(await connectionRefused(Number(new URL(url).port), 1_000)).toBe(true)
    },
    PROCESS_TEST_TIMEOUT,
  )
})

describe('node src/server.ts with a bad environment', () => {
  it('PORT=abc exits 1 with a message naming PORT', async () => {
    const server = await spawnServerProcess({
      env: { DATA_DIR: makeTempDir(), APP_KEY: TEST_APP_KEY, PORT: 'abc' },
    })
    expect(await server.exited).toEqual({ code: 1, signal: null })
    expect(server.stderr()).toContain('Invalid configuration')
    expect(server.stderr()).toMatch(/^ {2}- PORT: /m)
  })

  it('NODE_ENV=production without APP_KEY exits 1 with a message naming APP_KEY', async () => {
    const dataDir = makeTempDir()
    const server = await spawnServerProcess({ env: { NODE_ENV: 'production', DATA_DIR: dataDir } })
    expect(await server.exited).toEqual({ code: 1, signal: null })
    expect(server.stderr()).toMatch(/^ {2}- APP_KEY: required when NODE_ENV=production/m)
    // It stopped before touching anything: no key generated, no database created.
    expect(existsSync(join(dataDir, 'app-key'))).toBe(false)
    expect(existsSync(join(dataDir, 'reverb-app.json'))).toBe(false)
    expect(existsSync(join(dataDir, 'db'))).toBe(false)
    expect(server.stderr()).toMatch(/^ {2}- REVERB_APP_SECRET: required when NODE_ENV=production/m)
  })
  it('NODE_ENV=production without UPSTREAM_BASE_URL exits 1 with a message naming it', async () => {
    const server = await spawnServerProcess({
      env: { NODE_ENV: 'production', DATA_DIR: makeTempDir(), APP_KEY: TEST_APP_KEY },
    })
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
        const dataDir = makeTempDir()
        const server = await startServerProcess({
          env: { DATA_DIR: dataDir, APP_KEY: TEST_APP_KEY, DATABASE_URL: target.url },
        })
        const up = await fetch(`${server.baseUrl}/up`)
        expect(up.status).toBe(200)
        expect(await up.json()).toMatchObject({ status: 'ok', dependencies: { database: { up: true } } })
        const account = registration()
        const registered = await new TestClient(server.baseUrl).post('/api/register', account)
        expect(registered.status, registered.text).toBe(201)
        expect(await server.stop()).toEqual({ code: 0, signal: null })
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
