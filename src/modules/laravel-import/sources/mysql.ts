import mysql from 'mysql2/promise'
import type { SqlDriver } from './laravel-source.ts'

/**
 * The original's MySQL or MariaDB database (`mysql://` or `mariadb://user:password@host:port/name`),
 * on one connection. Timestamps arrive as the server's text and big ids as strings (source-values.ts
 * reads both); the session's time zone is left as Laravel's own connection left it, so TIMESTAMP
 * columns read back as Laravel wrote them.
 */
export async function openMysqlDriver(url: string): Promise<SqlDriver> {
  const where = new URL(url)
  const connection = await mysql.createConnection({
    host: where.hostname,
    port: where.port ? Number(where.port) : 3306,
    user: decodeURIComponent(where.username),
    password: decodeURIComponent(where.password),
    database: decodeURIComponent(where.pathname.slice(1)),
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    charset: 'utf8mb4',
  })
  return {
    label: `${where.protocol === 'mariadb:' ? 'MariaDB' : 'MySQL'} at ${where.host}${where.pathname}`,
    async all(query, params) {
      const [rows] = await connection.query(query, params)
      return rows as Record<string, unknown>[]
    },
    async columns(table) {
      const [rows] = await connection.query(
        'select column_name as name from information_schema.columns where table_schema = database() and table_name = ?',
        [table],
      )
      return new Set((rows as Array<{ name: string }>).map((row) => row.name.toLowerCase()))
    },
    close: () => connection.end(),
  }
}
