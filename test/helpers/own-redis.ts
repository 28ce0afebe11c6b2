import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { freePort } from './ports.ts'

export interface OwnRedis {
  /** redis://127.0.0.1:port */
  readonly url: string
  readonly port: number
  /** Starts it again after `stop()`, on the same port, empty (it keeps nothing on disk). */
  start(): Promise<void>
  /** SIGTERM, and the exit that follows: every connection is cut and every key is gone. */
  stop(): Promise<void>
  /** Stops it if it runs and removes its folder; safe to call twice. */
  destroy(): Promise<void>
}

/**
 * A Redis server of a test's own, for tests that stop or restart it: `redis-server` on a free port,
 * nothing kept on disk, under a temporary folder; never the machine's shared one.
 */
export async function startOwnRedis(): Promise<OwnRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-own-redis-'))
  const port = await freePort()
  const url = `redis://127.0.0.1:${port}`
  let child: ChildProcess | undefined
  let exited: Promise<void> = Promise.resolve()

  const answers = async () => {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    probe.on('error', () => {})
    try {
      await probe.connect()
      return (await probe.ping()) === 'PONG'
    } catch {
      return false
    } finally {
      probe.disconnect()
    }
  }
  const start = async () => {
    const server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    )
    child = server
    exited = new Promise((resolve) => server.once('exit', () => resolve()))
    const deadline = Date.now() + 10_000
    while (!(await answers())) {
      if (server.exitCode !== null) throw new Error(`redis-server on ${port} exited (${server.exitCode})`)
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not answer`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  }
  try {
    await start()
  } catch (error) {
    child?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    url,
    port,
    start,
    stop,
    async destroy() {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
