import { DatabaseSync, type SQLInputValue } from 'node:sqlite'
import type { SqlDriver } from './laravel-source.ts'

/**
 * Laravel's default database since 11 (`database/database.sqlite`), opened read-only through Node's
 * own SQLite: the file is never changed, and a path that does not exist is an error, not a new file.
 */
export function openSqliteDriver(path: string): SqlDriver {
  const db = new DatabaseSync(path, { readOnly: true })
  return {
    label: `SQLite ${path}`,
    async all(query, params) {
      return db.prepare(query).all(...(params as SQLInputValue[])) as Record<string, unknown>[]
    },
    async columns(table) {
      const rows = db.prepare('select name from pragma_table_info(?)').all(table)
      return new Set(rows.map((row) => String(row.name).toLowerCase()))
    },
    async close() {
      db.close()
    },
  }
}
