import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import pg from 'pg'
import { inject } from 'vitest'
import { type Database, openDatabase } from '../../src/db/client.ts'
import { timedSetup } from './setup-time.ts'

/**
 * The migrated databases test databases are copied from, made once per run (database-template.ts):
 * PGlite's data folder as a tarball, and with TEST_DATABASE_URL the server's template database.
 */
export interface DatabaseTemplate {
  pgliteDump: string
  postgres?: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    databaseTemplate?: DatabaseTemplate
  }
}

export interface ServerDatabase {
  /** Its name on the server (what `template` names for a copy of it). */
  name: string
  /** The connection URL of the new database. */
  url: string
  /** Drops the database, closing whatever connections are still open on it. */
  drop(): Promise<void>
}

/**
 * A brand-new database on the PostgreSQL server at serverUrl: empty (unmigrated), or a copy of
 * `template`.
 */
export async function createServerDatabase(
  serverUrl: string,
  template?: string,
  prefix = 'test',
): Promise<ServerDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`
  await onServer(serverUrl, `create database ${name}${template ? ` template ${template}` : ''}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () => onServer(serverUrl, `drop database if exists ${name} with (force)`),
  }
}

/** One statement on the server's own database, on a connection of its own. */
async function onServer(serverUrl: string, statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    await admin.query(statement)
  } finally {
    await admin.end()
  }
}

/**
 * A migrated, empty database for one test file: in-memory PGlite by default, or a brand-new
 * database on the PostgreSQL server of TEST_DATABASE_URL, dropped again on close. Each is a copy of
 * the run's migrated template; without one (a run with no global setup) it migrates itself.
 */
export function openTestDatabase(): Promise<Database> {
  return timedSetup(openMigratedDatabase)
}

async function openMigratedDatabase(): Promise<Database> {
  const serverUrl = process.env.TEST_DATABASE_URL
  const template = inject('databaseTemplate')
  if (!serverUrl) {
    if (template) {
      return openDatabase({ memory: true, from: pgliteDump(template.pgliteDump), wasmModule: pgliteWasm() })
    }
    const database = await openDatabase({ memory: true })
    await database.migrate()
    return database
  }
  const copyOf = templateName()
  const server = await createServerDatabase(serverUrl, copyOf)
  const database = await openDatabase({ url: server.url })
  if (!copyOf) await database.migrate()
  return {
    ...database,
    close: async () => {
      await database.close()
      await server.drop()
    },
  }
}

/** The run's PostgreSQL template database, when the run has one. */
export function templateName(): string | undefined {
  return inject('databaseTemplate')?.postgres
}

/**
 * Lays the run's migrated PGlite data folder into `folder` (a new DATA_DIR/db), for a CLI or server
 * process that opens PGlite there; without a template the folder stays empty and the process runs
 * initdb and the migrations itself.
 */
export function copyPgliteTemplate(folder: string): void {
  const template = inject('databaseTemplate')
  if (!template) return
  mkdirSync(folder, { recursive: true })
  // The dump names its members from the root of the data folder ("/base/..."); tar strips the "/".
  execFileSync('tar', ['-xf', template.pgliteDump, '-C', folder], { stdio: ['ignore', 'ignore', 'pipe'] })
}

// Read and compiled once per test process, for every database a file (or a worker's files) opens.
let dump: { file: string; blob: Blob } | undefined
let wasm: WebAssembly.Module | undefined

function pgliteDump(file: string): Blob {
  if (dump?.file !== file) dump = { file, blob: new Blob([readFileSync(file)]) }
  return dump.blob
}

// Node's global, which the project's type libraries declare only as types.
const { Module: WasmModule } = (
  globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => WebAssembly.Module } }
).WebAssembly

function pgliteWasm(): WebAssembly.Module {
  wasm ??= new WasmModule(
    readFileSync(createRequire(import.meta.url).resolve('@electric-sql/pglite/pglite.wasm')),
  )
  return wasm
}

/** The same database for a second app (another config, another instance); closing that app leaves it open. */
export function sharedDatabase(database: Database): Database {
  return {
    db: database.db,
    kind: database.kind,
    poolSize: database.poolSize,
    migrate: () => database.migrate(),
    ping: () => database.ping(),
    close: async () => {},
  }
}
