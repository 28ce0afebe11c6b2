import { execFile } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import type { CliResult } from '../helpers/cli.ts'
import { projectRoot } from '../helpers/project-root.ts'
import { type Exit, type ServerProcess, spawnServerProcess } from '../helpers/server-process.ts'

const nodeBin = join(projectRoot, 'node_modules/.bin/node')

/** Resolves once something accepts TCP connections on the port; rejects after `ms` or once `gaveUp()`. */
export async function waitForPort(port: number, ms: number, gaveUp: () => boolean = () => false) {
  const deadline = Date.now() + ms
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (gaveUp()) throw new Error(`the process listening on ${port} exited`)
    if (Date.now() > deadline) throw new Error(`nothing listens on ${port} after ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** `node src/cli.ts ...args` from the project root with exactly this environment (npm run cli -- ...). */
export function runCli(args: string[], env: Record<string, string>, cwd: string): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(nodeBin, [join(projectRoot, 'src/cli.ts'), ...args], { cwd, env }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr })
    })
  })
}

export interface Instance {
  readonly name: string
  readonly port: number
  /** `127.0.0.1:port`, as nginx names it in $upstream_addr. */
  readonly address: string
  /** The running process's id (undefined before its start). */
  pid(): number | undefined
  /** Everything it wrote (stdout and stderr), across restarts. */
  output(): string
  /** Starts `node src/server.ts` and waits until GET /up answers 200 on the instance itself. */
  start(): Promise<void>
  /** SIGTERM, and the exit that follows. */
  stop(): Promise<Exit>
  /** SIGKILL if it still runs (a failed test must leave nothing behind). */
  kill(): Promise<void>
}

const START_DEADLINE_MS = 60_000

/**
 * One instance as a deployment runs it: `node src/server.ts` with only its environment, from an
 * empty working directory (no .env of the project's leaks in), on a fixed port; restartable.
 * `stdout: 'ignore'` sends its stdout to /dev/null (see `ServerProcessOptions`).
 */
export function instance(
  name: string,
  port: number,
  env: Record<string, string>,
  dir: string,
  options: { stdout?: 'pipe' | 'ignore' } = {},
): Instance {
  mkdirSync(dir, { recursive: true })
  let current: ServerProcess | undefined
  // What the processes before the current one wrote.
  let earlier = ''
  const output = () => earlier + (current?.output() ?? '')
  return {
    name,
    port,
    address: `127.0.0.1:${port}`,
    pid: () => current?.child.pid,
    output,
    async start() {
      if (output() !== '') earlier = `${output()}\n--- ${name} started again ---\n`
      // Kept before it is up, so that a kill() meanwhile (a stack whose other instance failed) reaches it.
      current = await spawnServerProcess({
        env,
        bareEnv: true,
        cwd: dir,
        port,
        name: `instance ${name}`,
        upWithinMs: START_DEADLINE_MS,
        stdout: options.stdout,
      })
      await current.waitUntilUp()
    },
    async stop() {
      return current ? current.stop() : { code: null, signal: null }
    },
    async kill() {
      await current?.kill()
    },
  }
}
