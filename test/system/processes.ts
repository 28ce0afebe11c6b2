import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { type CliResult, projectRoot } from '../helpers/cli.ts'

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
  /** Everything it wrote (stdout and stderr), across restarts. */
  output(): string
  /** Starts `node src/server.ts` and waits until GET /up answers 200 on the instance itself. */
  start(): Promise<void>
  /** SIGTERM, and the exit that follows. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** SIGKILL if it still runs (a failed test must leave nothing behind). */
  kill(): Promise<void>
}

const START_DEADLINE_MS = 60_000

/**
 * One instance as a deployment runs it: `node src/server.ts` with only its environment, from an
 * empty working directory (no .env of the project's leaks in), on a fixed port.
 */
export function instance(name: string, port: number, env: Record<string, string>, dir: string): Instance {
  mkdirSync(dir, { recursive: true })
  let child: ChildProcess | undefined
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> = Promise.resolve({
    code: null,
    signal: null,
  })
  let output = ''
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null
  return {
    name,
    port,
    address: `127.0.0.1:${port}`,
    output: () => output,
    async start() {
      if (output !== '') output += `\n--- ${name} started again ---\n`
      const started = spawn(nodeBin, [join(projectRoot, 'src/server.ts')], {
        cwd: dir,
        env: { ...env, PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      child = started
      started.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString()
      })
      started.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString()
      })
      exited = new Promise((resolve) => started.once('exit', (code, signal) => resolve({ code, signal })))
      const deadline = Date.now() + START_DEADLINE_MS
      while (Date.now() < deadline && running()) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/up`)
          if (res.status === 200) return
        } catch {
          // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error(
        `instance ${name} did not answer /up (${running() ? 'timed out' : 'exited'}):\n${output}`,
      )
    },
    async stop() {
      if (running()) child?.kill('SIGTERM')
      return exited
    },
    async kill() {
      if (running()) child?.kill('SIGKILL')
      await exited
    },
  }
}
