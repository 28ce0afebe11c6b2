// Values as the three drivers answer them (numbers, bigint or numeric strings; text or bytes;
// timestamps as text), made into one shape. Laravel writes its timestamps as `Y-m-d H:i:s` in the
// app's timezone, UTC unless APP_TIMEZONE says otherwise: text without an offset is read as UTC.

const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/

/** A row id: a safe integer, whatever the driver gave; throws on anything else (ids are the batch keys). */
export function toId(value: unknown): number {
  const id = typeof value === 'string' ? Number(value) : typeof value === 'bigint' ? Number(value) : value
  if (typeof id !== 'number' || !Number.isSafeInteger(id)) {
    throw new Error(`Not an integer id the import can key on: ${typeof value}`)
  }
  return id
}

/** An id or null (a nullable foreign key such as sessions.user_id); an unreadable one is null. */
export function toOptionalId(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null
  const id = typeof value === 'string' || typeof value === 'bigint' ? Number(value) : value
  return typeof id === 'number' && Number.isSafeInteger(id) ? id : null
}

/** Text (a BLOB or binary column arrives as bytes), or null. */
export function toText(value: unknown): string | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'string') return value
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8')
  return String(value)
}

/** A boolean column: PostgreSQL's boolean, MySQL's tinyint(1), SQLite's 0/1. */
export function toBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value
  if (typeof value === 'number' || typeof value === 'bigint') return Number(value) !== 0
  if (typeof value === 'string') return ['1', 't', 'true'].includes(value.trim().toLowerCase())
  return false
}

/** An integer column (sessions.last_activity), or null. */
export function toInteger(value: unknown): number | null {
  const number = typeof value === 'string' || typeof value === 'bigint' ? Number(value) : value
  return typeof number === 'number' && Number.isSafeInteger(number) ? number : null
}

/**
 * A timestamp column, or null for none, MySQL's zero date or text that is not a timestamp. Text
 * without an offset is UTC (see above); PostgreSQL's timestamptz text carries its offset.
 */
export function toDate(value: unknown): Date | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value
  const text = toText(value)?.trim()
  if (!text) return null
  const match = TIMESTAMP.exec(text)
  if (!match) return null
  const [, year, month, day, hour, minute, second, fraction = '', zone = 'Z'] = match
  if (year === '0000') return null
  const offset = zone === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(3).replace(':', '') || '00'}`
  const date = new Date(
    `${year}-${month}-${day}T${hour}:${minute}:${second}.${fraction.padEnd(3, '0').slice(0, 3)}${offset}`,
  )
  return Number.isNaN(date.getTime()) ? null : date
}
