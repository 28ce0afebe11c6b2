import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres'
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import pg from 'pg'
import { requestGivenUp } from '../lib/request-deadline.ts'
import { fromDatabase, GIVEN_UP } from './failures.ts'
import * as schema from './schema/index.ts'
import { type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS } from './timeouts.ts'

/** One Drizzle type for PGlite and PostgreSQL; a transaction is a Db too, so repositories take either. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>

export interface Database {
  readonly db: Db
  readonly kind: 'pglite' | 'postgres'
  /** Connections used at most (PGlite is one connection). */
  readonly poolSize: number
  /**
   * The pool's connections now and the queries waiting for one (PostgreSQL). PGlite has none: it is
   * one in-process connection, with queries queued inside it.
   */
  readonly poolUsage?: () => { total: number; idle: number; waiting: number }
  /** Applies the committed SQL migrations under drizzle/ that have not run yet. */
  migrate(): Promise<void>
  /**
   * PGlite: its data folder as an uncompressed tarball, from which `openDatabase({ memory, from })`
   * starts a copy (the tests migrate one database per run and copy it for each file).
   */
  readonly dumpDataDir?: () => Promise<Blob>
  /** Throws when the database does not answer. */
  ping(): Promise<void>
  close(): Promise<void>
}

const migrationsFolder = fileURLToPath(new URL('../../drizzle', import.meta.url))
// Any fixed number: instances starting together take turns to migrate.
const MIGRATION_LOCK = 727_001

/** Connections a PostgreSQL pool opens at most unless told otherwise (DATABASE_POOL_SIZE). */
export const DEFAULT_POOL_SIZE = 10

/**
 * What stands between the pool and PostgreSQL (DATABASE_POOLER): nothing (or a session-mode pooler), or
 * a transaction-mode pooler, where each transaction may run on another server connection.
 */
export type Pooler = 'none' | 'transaction'

export type DatabaseTarget =
  | {
      url: string
      poolSize?: number
      pooler?: Pooler
      timeouts?: DatabaseTimeouts
      /** Migrations and the CLI: `longStatementMs` bounds every statement and lock wait. */
      long?: boolean
    }
  | { dataDir: string }
  | {
      memory: true
      /** A tarball from `dumpDataDir()` to start from, instead of an empty cluster. */
      from?: Blob
      /** The compiled pglite.wasm, to skip compiling it again for every copy in one process. */
      wasmModule?: WebAssembly.Module
    }

/** Opens PostgreSQL (a pg pool) for a URL, otherwise embedded PGlite in a folder or in memory. */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if ('url' in target) {
    return openPostgres(
      target.url,
      target.poolSize ?? DEFAULT_POOL_SIZE,
      target.pooler ?? 'none',
      target.timeouts ?? DEFAULT_DATABASE_TIMEOUTS,
      target.long ?? false,
    )
  }
  return openPglite('dataDir' in target ? { dataDir: target.dataDir } : target)
}

async function openPglite(target: {
  dataDir?: string
  from?: Blob
  wasmModule?: WebAssembly.Module
}): Promise<Database> {
  const { dataDir } = target
  // Loaded only here: a service on PostgreSQL never pays for PGlite's modules (40 ms, 5 MB at start).
  const [{ PGlite }, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ])
  if (dataDir) mkdirSync(dataDir, { recursive: true })
  const client = dataDir
    ? new PGlite(dataDir)
    : new PGlite({
        loadDataDir: target.from,
        pgliteWasmModule: target.wasmModule,
        // Its files are in memory already: a small buffer cache (not PostgreSQL's 128 MB, zeroed at
        // every start) halves the start of the many short-lived databases the tests open.
        postgresqlconf: ['shared_buffers = 4MB'],
      })
  await client.waitReady
  const db = drizzlePglite({ client, schema }) as unknown as Db
  return {
    db,
    kind: 'pglite',
    poolSize: 1,
    migrate: () => migratePglite(drizzlePglite({ client, schema }), { migrationsFolder }),
    dumpDataDir: () => client.dumpDataDir('none'),
    ping: async () => {
      if (client.closed) throw new Error('database is closed')
      await db.execute(sql`select 1`)
    },
    close: async () => {
      if (!client.closed) await client.close()
    },
  }
}

async function openPostgres(
  url: string,
  poolSize: number,
  pooler: Pooler,
  timeouts: DatabaseTimeouts,
  long: boolean,
): Promise<Database> {
  const statementMs = long ? timeouts.longStatementMs : timeouts.statementMs
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: timeouts.poolWaitMs,
    // PostgreSQL ends a statement, a lock wait or an idle transaction that runs over (and rolls its
    // transaction back). A transaction-mode pooler refuses these as connection settings: there they
    // belong to the pooler's connect_query (deploy/README.md, PgBouncer), and the read time-out below remains.
    ...(pooler === 'none'
      ? {
          statement_timeout: statementMs,
          lock_timeout: long ? timeouts.longStatementMs : timeouts.lockMs,
          idle_in_transaction_session_timeout: statementMs,
        }
      : {}),
    // This side's own bound, should the server's not apply: a little after the server's.
    query_timeout: statementMs + 2_000,
  })
  // A client that loses its server must not crash the process, idle in the pool or checked out
  // between two statements (a transaction PostgreSQL ended as idle too long): its next query fails.
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  pool.on('connect', refuseForGivenUpRequests)
  // A transaction's connect is not a query: Drizzle passes its failure on unwrapped. (pg-pool's own
  // query() connects with a callback.)
  const connect = pool.connect.bind(pool) as (callback?: (...args: unknown[]) => void) => Promise<unknown>
  pool.connect = ((callback?: (error: unknown, ...rest: unknown[]) => void) =>
    callback
      ? connect((error, ...rest) => callback(error ? fromDatabase(error) : error, ...rest))
      : connect().catch((error: unknown) => Promise.reject(fromDatabase(error)))) as typeof pool.connect
  if (pooler === 'transaction') pool.on('connect', sendUnnamed)
  const drizzleDb = drizzlePg({ client: pool, schema })
  let closed = false
  return {
    db: drizzleDb as unknown as Db,
    kind: 'postgres',
    poolSize,
    poolUsage: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    migrate: async () => {
      // The lock below is a session's, which a transaction-mode pooler cannot keep: check only.
      if (pooler === 'transaction') return checkMigrated(pool)
      // On one connection of its own, with the long time-outs: a migration may rightly take long.
      const lock = new pg.Client({
        connectionString: url,
        connectionTimeoutMillis: timeouts.poolWaitMs,
        statement_timeout: timeouts.longStatementMs,
        lock_timeout: timeouts.longStatementMs,
        query_timeout: timeouts.longStatementMs + 2_000,
      })
      await lock.connect()
      try {
        await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK])
        await migratePg(drizzlePg({ client: lock, schema }), { migrationsFolder })
      } finally {
        await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {})
        await lock.end()
      }
    },
    ping: async () => {
      await pool.query('select 1')
    },
    close: async () => {
      if (closed) return
      closed = true
      await pool.end()
    },
  }
}

const ROLLBACK = /^\s*rollback\b/i

/**
 * A request given up (its client gone, or its deadline passed: lib/request-deadline.ts) sends no
 * further statement but ROLLBACK: a transaction it had open is rolled back at its COMMIT instead of
 * being committed after the balancer has answered for it.
 */
function refuseForGivenUpRequests(client: pg.PoolClient): void {
  const query = client.query
  client.query = function guardedQuery(this: pg.PoolClient, config: unknown, ...rest: unknown[]) {
    const givenUp = requestGivenUp()
    const text = typeof config === 'string' ? config : (config as { text?: unknown } | null)?.text
    if (givenUp === undefined || (typeof text === 'string' && ROLLBACK.test(text))) {
      return Reflect.apply(query, this, [config, ...rest])
    }
    const error = Object.assign(new Error(`statement refused: the request was given up (${givenUp})`), {
      code: GIVEN_UP,
    })
    const callback = rest.findLast((arg) => typeof arg === 'function') as ((e: Error) => void) | undefined
    if (callback) return void process.nextTick(callback, error)
    return Promise.reject(error)
  } as typeof client.query
}

/**
 * Behind a transaction-mode pooler the next statement of a client may run on another server
 * connection, where a statement prepared by name on the last one does not exist (PgBouncer before
 * 1.21 does not track them). So every statement this client sends goes out unnamed: the same SQL,
 * parsed and planned with each execution, as any statement without a name is.
 */
function sendUnnamed(client: pg.PoolClient): void {
  const query = client.query
  client.query = function unnamedQuery(this: pg.PoolClient, config: unknown, ...rest: unknown[]) {
    const named =
      typeof config === 'object' &&
      config !== null &&
      'name' in config &&
      // A submittable (a cursor, a stream) is passed on as it is.
      typeof (config as { submit?: unknown }).submit !== 'function'
    return Reflect.apply(query, this, [named ? { ...config, name: undefined } : config, ...rest])
  } as typeof client.query
}

/**
 * Instead of migrating through a transaction-mode pooler (the migration lock is a session's): throws
 * when a committed migration is missing from the database, naming the release step that applies it.
 */
async function checkMigrated(pool: pg.Pool): Promise<void> {
  let applied = 0
  try {
    const { rows } = await pool.query<{ latest: string | null }>(
      'select max(created_at) as latest from drizzle.__drizzle_migrations',
    )
    applied = Number(rows[0]?.latest ?? 0)
  } catch (error) {
    // No migrations table (42P01), or not even its schema (3F000): nothing was ever applied.
    const code = (error as { code?: string }).code
    if (code !== '42P01' && code !== '3F000') throw error
  }
  const pending = readMigrationFiles({ migrationsFolder }).filter((m) => m.folderMillis > applied)
  if (pending.length > 0) {
    throw new Error(
      `${pending.length} database migration(s) not applied. DATABASE_POOLER=transaction does not migrate: ` +
        'run `npm run cli -- migrate` with DATABASE_URL pointing at PostgreSQL itself (not the pooler), then start again.',
    )
  }
}
