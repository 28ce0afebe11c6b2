import type { TestClient } from '../helpers/client.ts'
import { type OwnPostgres, startOwnPostgres } from '../helpers/own-postgres.ts'
import { type OwnRedis, startOwnRedis } from '../helpers/own-redis.ts'
import { registeredAt, type Stack, startStack } from './stack.ts'

export interface FaultStack {
  readonly stack: Stack
  /** The PostgreSQL cluster and the Redis server of this test alone: stop, restart or lock them at will. */
  readonly postgres: OwnPostgres
  readonly redis: OwnRedis
  /** A new user registered through nginx, the client signed in as them. */
  signedIn(name?: string): Promise<{ client: TestClient; id: number; email: string }>
  stop(): Promise<void>
}

/**
 * The deployment (nginx over two instances) on a PostgreSQL and a Redis of the test's own, so that a
 * fault test can break them without touching the machine's shared servers; everything it started is
 * stopped by `stop()`, and by itself when the start fails.
 */
export async function startFaultStack(env: Record<string, string> = {}): Promise<FaultStack> {
  const started: Array<() => Promise<void>> = []
  const stopAll = async () => {
    for (const stop of started.splice(0).reverse()) await stop().catch(() => {})
  }
  try {
    const postgres = await startOwnPostgres()
    started.push(() => postgres.destroy())
    const redis = await startOwnRedis()
    started.push(() => redis.destroy())
    const stack = await startStack({
      viaPgBouncer: false,
      databaseServerUrl: postgres.url,
      redisUrl: redis.url,
      env,
    })
    started.push(() => stack.stop())
    return {
      stack,
      postgres,
      redis,
      signedIn: (name = 'Fault Trader') => registeredAt(stack.nginx.url, name, 'fault'),
      stop: stopAll,
    }
  } catch (error) {
    await stopAll()
    throw error
  }
}

/** What a stretch of load saw: every answer's status and time, for the test to judge and to print. */
export interface LoadReport {
  requests: number
  byStatus: Record<string, number>
  /** Answers slower than `slowMs`. */
  slow: number
  maxMs: number
  /** ms from the start of the load to the last answer that was not the expected one (0: none). */
  lastFailureAtMs: number
}

/**
 * Keeps `clients` busy, each sending `request` again as soon as its last answer came, until `stop()`
 * (each request gets its own time limit, so a hang shows as a status 'timeout').
 */
export function startLoad(
  clients: readonly TestClient[],
  request: (client: TestClient, i: number) => Promise<{ status: number }>,
  { slowMs = 1000, expected = (status: number) => status < 500 } = {},
) {
  const began = Date.now()
  const report: LoadReport = { requests: 0, byStatus: {}, slow: 0, maxMs: 0, lastFailureAtMs: 0 }
  let running = true
  const loops = clients.map(async (client, i) => {
    while (running) {
      const sent = Date.now()
      let status: string
      try {
        status = String((await request(client, i)).status)
      } catch (error) {
        status = (error as Error).name === 'TimeoutError' ? 'timeout' : 'network-error'
      }
      const ms = Date.now() - sent
      report.requests += 1
      report.byStatus[status] = (report.byStatus[status] ?? 0) + 1
      if (ms > slowMs) report.slow += 1
      report.maxMs = Math.max(report.maxMs, ms)
      if (!expected(Number(status))) report.lastFailureAtMs = Date.now() - began
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })
  return {
    async stop(): Promise<LoadReport> {
      running = false
      await Promise.all(loops)
      return report
    },
  }
}

/** One line a fault case prints: what it did, what the load saw, how long recovery took. */
export function printFault(name: string, report: LoadReport, extra: Record<string, unknown> = {}) {
  console.log(`fault ${name}: ${JSON.stringify({ ...report, ...extra })}`)
}
