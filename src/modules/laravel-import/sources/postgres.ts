import pg from 'pg'
import type { SqlDriver } from './laravel-source.ts'

// Timestamps and bigints as the server writes them, as text: source-values.ts reads them, so a
// `timestamp` column is not shifted by this machine's time zone and no id loses precision.
const RAW_TEXT = new Set([20, 1082, 1114, 1184])
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    RAW_TEXT.has(oid)
      ? (value: string) => value
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
}

/** `?` placeholders, as every source's SQL is written, numbered as PostgreSQL wants them. */
const numbered = (query: string) => {
  let n = 0
  return query.replace(/\?/g, () => `$${++n}`)
}

/** The original's PostgreSQL database (one connection: the import reads one batch at a time). */
export async function openPostgresDriver(url: string): Promise<SqlDriver> {
  const client = new pg.Client({ connectionString: url, types })
  await client.connect()
  const where = new URL(url)
  return {
    label: `PostgreSQL at ${where.host}${where.pathname}`,
    async all(query, params) {
      return (await client.query(numbered(query), params)).rows
    },
    async columns(table) {
      const { rows } = await client.query<{ name: string }>(
        'select column_name as name from information_schema.columns where table_name = $1 and table_schema = any(current_schemas(false))',
        [table],
      )
      return new Set(rows.map((row) => row.name.toLowerCase()))
    },
    close: () => client.end(),
  }
}
