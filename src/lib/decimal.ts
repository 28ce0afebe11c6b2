/**
 * Exact decimals for credits (numeric(20, 4) in the database). PostgreSQL does the arithmetic; these
 * helpers only move values across the wire: a JSON number in, a decimal string to SQL, a number out.
 */

/** Digits PostgreSQL's numeric(20, 4) keeps after the point. */
export const CREDIT_SCALE = 4

const DECIMAL = /^-?\d{1,16}(\.\d{1,4})?$/

/**
 * A JSON number as the exact decimal string it was written as (`0.1` -> "0.1"), or null when it has
 * more than four decimals, an exponent, or more digits than numeric(20, 4) holds.
 */
export function toCreditString(value: number): string | null {
  if (!Number.isFinite(value)) return null
  // String() gives the shortest text that reads back as the same double: what the client wrote.
  const text = String(value)
  return DECIMAL.test(text) ? text : null
}

/** A numeric column's text (`"12.5000"`) as the JSON number the app reads (12.5). */
export function creditNumber(value: string | null | undefined): number {
  return value == null ? 0 : Number(value)
}

/** The negation of a decimal string, without going through a float. */
export function negateCredits(value: string): string {
  return value.startsWith('-') ? value.slice(1) : `-${value}`
}

const SCALE = 10n ** BigInt(CREDIT_SCALE)

/** A decimal string with at most four decimals as an integer count of 1/10000 credits. */
export function toCreditUnits(value: string): bigint {
  const negative = value.startsWith('-')
  const [whole = '0', fraction = ''] = (negative ? value.slice(1) : value).split('.')
  const units =
    BigInt(whole || '0') * SCALE + BigInt(fraction.padEnd(CREDIT_SCALE, '0').slice(0, CREDIT_SCALE))
  return negative ? -units : units
}

/** Integer 1/10000 credits as the JSON number they stand for (exact division, correctly rounded). */
export function creditUnitsToNumber(units: bigint): number {
  return Number(units) / Number(SCALE)
}

/** Integer 1/10000 credits as the exact decimal string SQL takes (12345n -> "1.2345"). */
export function creditUnitsToString(units: bigint): string {
  const negative = units < 0n
  const abs = negative ? -units : units
  const fraction = (abs % SCALE).toString().padStart(CREDIT_SCALE, '0').replace(/0+$/, '')
  const text = fraction ? `${abs / SCALE}.${fraction}` : `${abs / SCALE}`
  return negative ? `-${text}` : text
}
