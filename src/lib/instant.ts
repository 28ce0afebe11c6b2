/** An instant read from text, exact to the microsecond. */
export interface Instant {
  /** For PostgreSQL (timestamptz), to the microsecond. */
  iso: string
  /** Microseconds since the epoch, to compare. */
  micros: bigint
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
// A date and a time, `T` or a space between, seconds and up to 6 decimals optional, UTC unless an offset says.
const TIMESTAMP =
  /^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?(Z|[+-]\d{2}:?\d{2})?$/i

/** A calendar date `YYYY-MM-DD` that exists (no 31 November). */
export const validDate = (date: string): boolean => {
  const match = DATE.exec(date)
  if (!match) return false
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number]
  const parsed = new Date(Date.UTC(year, month - 1, day))
  return parsed.getUTCFullYear() === year && parsed.getUTCMonth() === month - 1 && parsed.getUTCDate() === day
}

/**
 * An ISO 8601 timestamp (`2026-11-30T09:15:00Z`, `2026-11-30T10:15:00.5+01:00`) or MySQL's way of
 * printing one (`2026-11-30 09:15:00`): UTC when it names no offset, up to microseconds; null when
 * it is neither or names no real time.
 */
export function parseTimestamp(value: string): Instant | null {
  const match = TIMESTAMP.exec(value)
  if (!match) return null
  const [, date = '', hours = '', minutes = '', seconds = '00', fraction = '', zone = 'Z'] = match
  if (!validDate(date) || Number(hours) > 23 || Number(minutes) > 59 || Number(seconds) > 59) return null
  const offset = zone.toUpperCase() === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(-2)}`
  const millis = Date.parse(`${date}T${hours}:${minutes}:${seconds}${offset}`)
  if (Number.isNaN(millis)) return null
  const micros = BigInt(millis) * 1000n + BigInt(fraction.padEnd(6, '0'))
  return { iso: `${date}T${hours}:${minutes}:${seconds}.${fraction.padEnd(6, '0')}${offset}`, micros }
}
