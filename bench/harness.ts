import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import type { Pool } from 'undici'
import { buildApp } from '../src/app.ts'
import { type Config, generateAppKey, loadConfig } from '../src/config.ts'
import { type Database, openDatabase } from '../src/db/client.ts'

/** What the database benchmarks share: a throwaway database, the app on it, timed client loops. */

export const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

async function onServer(statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: SERVER_URL })
  await admin.connect()
  try {
    await admin.query(statement)
  } finally {
    await admin.end()
  }
}

export interface BenchApp {
  app: FastifyInstance
  /** What the app was built with (the real-time key, for one). */
  config: Config
  database: Database
  /** The throwaway database's connection URL. */
  databaseUrl: string
  /** Where the app listens (loopback). */
  appUrl: string
  /** Closes the app and drops the database and the data folder. */
  close(): Promise<void>
}

/** The app on a fresh database `{prefix}_<hex>` of BENCH_DATABASE_URL's server, listening on loopback. */
export async function startBenchApp(prefix: string): Promise<BenchApp> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  await onServer(`create database ${name}`)
  const url = new URL(SERVER_URL)
  url.pathname = `/${name}`
  const databaseUrl = url.toString()
  const dataDir = mkdtempSync(join(os.tmpdir(), `${prefix}-`))
  const close = async () => {
    await onServer(`drop database if exists ${name} with (force)`)
    rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    const database = await openDatabase({ url: databaseUrl })
    const config = loadConfig(
      {
        NODE_ENV: 'test',
        APP_KEY: generateAppKey(),
        DATA_DIR: dataDir,
        LOG_LEVEL: 'silent',
        DATABASE_URL: databaseUrl,
      },
      dataDir,
    )
    const app = await buildApp(config, { database })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const address = app.server.address()
    if (!address || typeof address === 'string') throw new Error('no port')
    return {
      app,
      config,
      database,
      databaseUrl,
      appUrl: `http://127.0.0.1:${address.port}`,
      close: async () => {
        await app.close()
        await close()
      },
    }
  } catch (error) {
    await close()
    throw error
  }
}

export const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? 0
    : (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0)

/** The 1-minute load average, as printed next to each figure. */
export const load1 = () => os.loadavg()[0]?.toFixed(2) ?? '?'

export interface RunResult {
  ops: number
  errors: number
  seconds: number
  latencies: number[]
  /** What a step counts as done (captured holds, stored messages). */
  succeeded: number
  statuses: Map<number, number>
  /** The load average when the run ended. */
  load: string
}

/**
 * `clients` loops for `seconds`, each calling `step` with the next session in turn and awaiting
 * every answer (so what a run counts is exact); `step` answers the timings of its requests.
 */
export async function runClients<S>(
  clients: number,
  sessions: S[],
  seconds: number,
  step: (session: S, n: number, result: RunResult) => Promise<number[]>,
): Promise<RunResult> {
  const result: RunResult = {
    ops: 0,
    errors: 0,
    seconds,
    latencies: [],
    succeeded: 0,
    statuses: new Map(),
    load: '',
  }
  const started = performance.now()
  const deadline = started + seconds * 1000
  let counter = 0
  await Promise.all(
    Array.from({ length: clients }, async (_, worker) => {
      for (let i = worker; performance.now() < deadline; i += clients) {
        const session = sessions[i % sessions.length] as S
        const timings = await step(session, counter++, result)
        result.latencies.push(...timings)
        result.ops += timings.length
      }
    }),
  )
  result.seconds = (performance.now() - started) / 1000
  result.latencies.sort((a, b) => a - b)
  result.load = load1()
  return result
}

/** One timed request through the benchmark's pool: its status, body and milliseconds. */
export function timedCaller(http: Pool) {
  return async (
    method: 'GET' | 'POST',
    path: string,
    session: { headers: Record<string, string> },
    body?: unknown,
  ) => {
    const t0 = performance.now()
    const res = await http.request({
      path,
      method,
      headers: session.headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.body.text()
    return { status: res.statusCode, text, ms: performance.now() - t0 }
  }
}
