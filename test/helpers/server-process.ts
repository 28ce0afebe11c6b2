import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SPA_ORIGIN } from './build-test-app.ts'
import { freePort } from './ports.ts'
import { nodeBin, projectRoot } from './project-root.ts'
import { copyPgliteTemplate } from './test-database.ts'

// The service as `npm start` runs it: a real Node 24 process, real sockets, real signals.
const serverEntry = join(projectRoot, 'src/server.ts')

// PGlite's first start in a new folder runs initdb: seconds, more on a busy machine.
const UP_DEADLINE_MS = 90_000

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

export interface ServerProcessOptions {
  /** Laid over the test defaults (see `testDefaults`), or the whole environment with `bareEnv`. */
  env?: Record<string, string>
  /** Only `env` and PORT: a deployment's environment names everything itself, and a gap must show. */
  bareEnv?: boolean
  /** The working directory; by default a fresh empty folder, so no .env of the project's is read. */
  cwd?: string
  /** A fixed port; by default a free one. */
  port?: number
  /** Names the process in the message of a failed start. */
  name?: string
  /** How long `waitUntilUp` waits for GET /up to answer 200. */
  upWithinMs?: number
  /**
   * `ignore`: the process's stdout (its log, an access line per request) goes to /dev/null instead
   * of being kept here, for a load that would pile it up in this process (a bench); stderr is kept.
   */
  stdout?: 'pipe' | 'ignore'
}

export interface ServerProcess {
  readonly child: ChildProcess
  readonly port: number
  readonly baseUrl: string
  stdout(): string
  stderr(): string
  /** stdout and stderr together, in the order they came. */
  output(): string
  /** The JSON log lines so far. Every non-blank stdout line must be one: the logger writes nothing else. */
  logLines(): Array<Record<string, unknown>>
  readonly exited: Promise<Exit>
  running(): boolean
  /** Resolves once GET /up answers 200; kills the process and throws if that never comes. */
  waitUntilUp(): Promise<void>
  /** Sends `signal` if it still runs, and resolves with the exit that follows. */
  stop(signal?: NodeJS.Signals): Promise<Exit>
  /** SIGKILL if it still runs: a failed test must leave no process behind. */
  kill(): Promise<void>
}

const spawned = new Set<ServerProcess>()
const tempDirs: string[] = []

/** A fresh empty folder, removed by `removeTempDirs()`. */
export function makeTempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-server-'))
  tempDirs.push(dir)
  return dir
}

/**
 * A fresh DATA_DIR whose PGlite database (DATA_DIR/db) is a copy of the run's migrated one, for a
 * server whose test is not about its first start: it skips initdb and the migrations.
 */
export function migratedDataDir(): string {
  const dir = makeTempDir()
  copyPgliteTemplate(join(dir, 'db'))
  return dir
}

export function removeTempDirs() {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}

/** Kills every server this file spawned that still runs (vitest gives each file its own copy of this module). */
export async function killServerProcesses() {
  for (const server of spawned) await server.kill()
  spawned.clear()
}

function testDefaults(port: number): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? tmpdir(),
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(port),
    FRONTEND_URL: SPA_ORIGIN,
    LOG_LEVEL: 'info',
    // No grace period at a stop: nothing here balances load, and each stop would wait it out.
    SHUTDOWN_GRACE_MS: '0',
  }
}

/**
 * Spawns `node src/server.ts` with only the environment the options give (no DATABASE_URL, APP_KEY
 * or .env leaking in from the test runner), without waiting for it to listen.
 */
export async function spawnServerProcess(options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const port = options.port ?? (await freePort())
  const env = options.env ?? {}
  const child = spawn(nodeBin, [serverEntry], {
    cwd: options.cwd ?? makeTempDir(),
    env: options.bareEnv ? { ...env, PORT: String(port) } : { ...testDefaults(port), ...env },
    stdio: ['ignore', options.stdout ?? 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    output += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    output += chunk.toString()
  })
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const running = () => child.exitCode === null && child.signalCode === null
  const server: ServerProcess = {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    output: () => output,
    logLines: () =>
      stdout
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    exited,
    running,
    async waitUntilUp() {
      const deadline = Date.now() + (options.upWithinMs ?? UP_DEADLINE_MS)
      while (Date.now() < deadline && running()) {
        const up = await fetch(`${server.baseUrl}/up`).catch(() => null)
        if (up?.status === 200) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const why = running() ? 'timed out' : `exited with ${child.exitCode ?? child.signalCode}`
      await server.kill()
      throw new Error(
        `${options.name ?? 'server'} did not answer /up (${why})\nstdout:\n${stdout}\nstderr:\n${stderr}`,
      )
    },
    async stop(signal = 'SIGTERM') {
      if (running()) child.kill(signal)
      return exited
    },
    async kill() {
      if (running()) child.kill('SIGKILL')
      await exited
    },
  }
  spawned.add(server)
  return server
}

/** Spawns the server and resolves once GET /up answers 200. */
export async function startServerProcess(options: ServerProcessOptions = {}): Promise<ServerProcess> {
  const server = await spawnServerProcess(options)
  await server.waitUntilUp()
  return server
}
