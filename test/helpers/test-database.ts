import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { type Database, openDatabase } from '../../src/db/client.ts'

export interface ServerDatabase {
  /** The connection URL of the new database. */
  url: string
  /** Drops the database, closing whatever connections are still open on it. */
  drop(): Promise<void>
}

/** A brand-new, empty (unmigrated) database on the PostgreSQL server at serverUrl. */
export async function createServerDatabase(serverUrl: string): Promise<ServerDatabase> {
  const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`
  await onServer(serverUrl, `create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: () => onServer(serverUrl, `drop database if exists ${name} with (force)`),
  }
}

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
 * database on the PostgreSQL server of TEST_DATABASE_URL, dropped again on close.
 */
export async function openTestDatabase(): Promise<Database> {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (!serverUrl) {
    const database = await openDatabase({ memory: true })
    await database.migrate()
    return database
  }
  const server = await createServerDatabase(serverUrl)
  const database = await openDatabase({ url: server.url })
  await database.migrate()
  return {
    ...database,
    close: async () => {
      await database.close()
      await server.drop()
    },
  }
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
