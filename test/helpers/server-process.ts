import { type ChildProcess, spawn } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SPA_ORIGIN } from './build-test-app.ts'
import { freePort } from './ports.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const nodeBin = join(root, 'node_modules/.bin/node')
const serverEntry = join(root, 'src/server.ts')

// PGlite's first start in a new folder runs initdb: seconds, more on a busy machine.
const START_DEADLINE_MS = 90_000

export interface ServerProcess {
  child: ChildProcess
  port: number
  baseUrl: string
  stdout(): string
  /** The JSON log lines written so far (LOG_LEVEL=info or lower). */
  logLines(): Array<Record<string, unknown>>
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGKILL if it still runs: a failed test must leave no process behind. */
  kill(): Promise<void>
}

/**
 * `node src/server.ts` as `npm start` runs it, with only `env` (no DATABASE_URL or .env of the
 * runner's: its working directory is `cwd`, an empty folder), on a free loopback port; resolves
 * once GET /up answers 200.
 */
export async function startServerProcess(env: Record<string, string>, cwd: string): Promise<ServerProcess> {
  const port = await freePort()
  const child = spawn(nodeBin, [serverEntry], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      FRONTEND_URL: SPA_ORIGIN,
      LOG_LEVEL: 'info',
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
  const running = () => child.exitCode === null && child.signalCode === null
  const server: ServerProcess = {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    logLines: () =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    exited,
    async kill() {
      if (running()) child.kill('SIGKILL')
      await exited
    },
  }
  const deadline = Date.now() + START_DEADLINE_MS
  while (Date.now() < deadline && running()) {
    const up = await fetch(`${server.baseUrl}/up`).catch(() => null)
    if (up?.status === 200) return server
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await server.kill()
  throw new Error(`server did not answer /up\nstdout:\n${stdout}\nstderr:\n${stderr}`)
}
