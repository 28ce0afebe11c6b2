import { resolve } from 'node:path'
import { createLaravelSource, type LaravelSource, type SqlDriver } from './laravel-source.ts'

/** A `--from` URL the import cannot use; the message says what it takes. */
export class SourceUrlError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SourceUrlError'
  }
}

export const SOURCE_URL_FORMS =
  'mysql://user:password@host:3306/name, mariadb://..., postgres://user:password@host:5432/name or sqlite:<path>'

/**
 * Opens the Laravel database `url` names, read-only in intent (the import only selects): MySQL or
 * MariaDB, PostgreSQL, or a SQLite file (`sqlite:database/database.sqlite`, `sqlite:/abs/path`).
 * Each driver is loaded only when its URL is given.
 */
export async function openLaravelSource(url: string): Promise<LaravelSource> {
  let driver: SqlDriver
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase()
  if (scheme === 'sqlite') {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    if (path === '') throw new SourceUrlError('sqlite: needs the path of the database file.')
    const { openSqliteDriver } = await import('./sqlite.ts')
    driver = openSqliteDriver(resolve(path))
  } else if (scheme === 'mysql' || scheme === 'mariadb') {
    const { openMysqlDriver } = await import('./mysql.ts')
    driver = await openMysqlDriver(url)
  } else if (scheme === 'postgres' || scheme === 'postgresql') {
    const { openPostgresDriver } = await import('./postgres.ts')
    driver = await openPostgresDriver(url)
  } else {
    throw new SourceUrlError(`--from takes ${SOURCE_URL_FORMS}.`)
  }
  return createLaravelSource(driver)
}
