import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync, type SQLInputValue } from 'node:sqlite'
import type mysql from 'mysql2/promise'
import pg from 'pg'
import { insertStatement, LARAVEL_SCHEMA, type LaravelDialect, type Row } from './laravel-schema.ts'
import { type OwnMariadb, startOwnMariadb } from './own-mariadb.ts'
import { createServerDatabase } from './test-database.ts'

/** A Laravel app's database, made for a test: its URL for `--from`, and what the app would write. */
export interface LaravelOriginal {
  readonly dialect: LaravelDialect
  readonly url: string
  /** Inserts rows into a table, as Eloquent would (values in the table's column order of `rows[0]`). */
  insert(table: string, rows: Row[]): Promise<void>
  /** Drops the database (and stops its server, for MariaDB); safe to call twice. */
  destroy(): Promise<void>
}

async function sqliteOriginal(): Promise<LaravelOriginal> {
  const dir = mkdtempSync(join(tmpdir(), 'laravel-sqlite-'))
  const file = join(dir, 'database.sqlite')
  const db = new DatabaseSync(file)
  for (const statement of LARAVEL_SCHEMA.sqlite) db.exec(statement)
  let open = true
  return {
    dialect: 'sqlite',
    url: `sqlite:${file}`,
    async insert(table, rows) {
      for (let i = 0; i < rows.length; i += 500) {
        const [query, params] = insertStatement('sqlite', table, rows.slice(i, i + 500))
        db.prepare(query).run(...(params as SQLInputValue[]))
      }
    },
    async destroy() {
      if (open) db.close()
      open = false
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function postgresOriginal(): Promise<LaravelOriginal> {
  const server = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
  const database = await createServerDatabase(server, undefined, 'laravel')
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  for (const statement of LARAVEL_SCHEMA.postgres) await client.query(statement)
  let open = true
  return {
    dialect: 'postgres',
    url: database.url,
    async insert(table, rows) {
      for (let i = 0; i < rows.length; i += 500) {
        const [query, params] = insertStatement('postgres', table, rows.slice(i, i + 500))
        await client.query(query, params)
      }
    },
    async destroy() {
      if (open) await client.end()
      open = false
      await database.drop()
    },
  }
}

async function mariadbOriginal(): Promise<LaravelOriginal> {
  const server: OwnMariadb = await startOwnMariadb()
  let root: mysql.Connection | undefined
  try {
    root = await server.connectAsRoot()
    await root.query('create database laravel character set utf8mb4 collate utf8mb4_unicode_ci')
    // The app's own account over TCP, with a password that needs escaping in a URL.
    await root.query("create user 'laravel'@'127.0.0.1' identified by 'p@ss:w/rd'")
    await root.query("grant all on laravel.* to 'laravel'@'127.0.0.1'")
    await root.query('use laravel')
    for (const statement of LARAVEL_SCHEMA.mariadb) await root.query(statement)
  } catch (error) {
    await root?.end()
    await server.destroy()
    throw error
  }
  const connection = root
  let open = true
  return {
    dialect: 'mariadb',
    url: `mariadb://laravel:${encodeURIComponent('p@ss:w/rd')}@127.0.0.1:${server.port}/laravel`,
    async insert(table, rows) {
      for (let i = 0; i < rows.length; i += 500) {
        const [query, params] = insertStatement('mariadb', table, rows.slice(i, i + 500))
        await connection.query(query, params)
      }
    },
    async destroy() {
      if (open) await connection.end()
      open = false
      await server.destroy()
    },
  }
}

/** A new Laravel-shaped database of the dialect: a temp SQLite file, a PostgreSQL database, an own MariaDB. */
export function createLaravelOriginal(dialect: LaravelDialect): Promise<LaravelOriginal> {
  if (dialect === 'sqlite') return sqliteOriginal()
  if (dialect === 'postgres') return postgresOriginal()
  return mariadbOriginal()
}
