import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres'
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator'
import pg from 'pg'
import * as schema from './schema/index.ts'

/** One Drizzle type for PGlite and PostgreSQL; a transaction is a Db too, so repositories take either. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>

export interface Database {
  readonly db: Db
  readonly kind: 'pglite' | 'postgres'
  /** Connections used at most (PGlite is one connection). */
  readonly poolSize: number
  /** Applies the committed SQL migrations under drizzle/ that have not run yet. */
  migrate(): Promise<void>
  /** Throws when the database does not answer. */
  ping(): Promise<void>
  close(): Promise<void>
}

const migrationsFolder = fileURLToPath(new URL('../../drizzle', import.meta.url))
// Any fixed number: instances starting together take turns to migrate.
const MIGRATION_LOCK = 727_001

/** Connections a PostgreSQL pool opens at most unless told otherwise (DATABASE_POOL_SIZE). */
export const DEFAULT_POOL_SIZE = 10

export type DatabaseTarget = { url: string; poolSize?: number } | { dataDir: string } | { memory: true }

/** Opens PostgreSQL (a pg pool) for a URL, otherwise embedded PGlite in a folder or in memory. */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if ('url' in target) return openPostgres(target.url, target.poolSize ?? DEFAULT_POOL_SIZE)
  return openPglite('dataDir' in target ? target.dataDir : undefined)
}

async function openPglite(dataDir: string | undefined): Promise<Database> {
  if (dataDir) mkdirSync(dataDir, { recursive: true })
  const client = dataDir ? new PGlite(dataDir) : new PGlite()
  await client.waitReady
  const db = drizzlePglite({ client, schema }) as unknown as Db
  return {
    db,
    kind: 'pglite',
    poolSize: 1,
    migrate: () => migratePglite(drizzlePglite({ client, schema }), { migrationsFolder }),
    ping: async () => {
      if (client.closed) throw new Error('database is closed')
      await db.execute(sql`select 1`)
    },
    close: async () => {
      if (!client.closed) await client.close()
    },
  }
}

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 5000 })
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => {})
  const drizzleDb = drizzlePg({ client: pool, schema })
  let closed = false
  return {
    db: drizzleDb as unknown as Db,
    kind: 'postgres',
    poolSize,
    migrate: async () => {
      const lock = await pool.connect()
      try {
        await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK])
        await migratePg(drizzleDb, { migrationsFolder })
      } finally {
        await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {})
        lock.release()
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
