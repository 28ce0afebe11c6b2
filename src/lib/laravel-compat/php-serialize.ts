import type { PhpKey } from './php-unserialize.ts'

/** What serializePhp writes: arrays from JS arrays (list), Maps (ordered) or plain objects. */
export type PhpSerializable =
  | null
  | boolean
  | number
  | bigint
  | string
  | readonly PhpSerializable[]
  | ReadonlyMap<PhpKey, PhpSerializable>
  | { readonly [key: string]: PhpSerializable }

const NUMERIC_KEY = /^(?:0|-?[1-9]\d*)$/

// PHP's float text under serialize_precision -1: the shortest digits that read back the same,
// in exponent form ("1.0E+25") below 1e-4 and from 1e17 up.
function phpFloat(value: number): string {
  if (Number.isNaN(value)) return 'NAN'
  if (!Number.isFinite(value)) return value > 0 ? 'INF' : '-INF'
  if (Object.is(value, -0)) return '-0'
  const [digits = '', exponentText = '0'] = value.toExponential().split('e')
  const exponent = Number(exponentText)
  // JS writes these plainly too, with the same shortest digits.
  if (exponent >= -4 && exponent < 17) return String(value)
  const mantissa = digits.includes('.') ? digits : `${digits}.0`
  return `${mantissa}E${exponent < 0 ? '-' : '+'}${Math.abs(exponent)}`
}

function key(name: PhpKey): string {
  if (typeof name === 'number') return `i:${name};`
  return NUMERIC_KEY.test(name) && Number.isSafeInteger(Number(name)) ? `i:${name};` : string(name)
}

function string(text: string): string {
  return `s:${Buffer.byteLength(text, 'utf8')}:"${text}";`
}

function entries(list: Iterable<readonly [PhpKey, PhpSerializable]>): string {
  let count = 0
  let body = ''
  for (const [name, item] of list) {
    count++
    body += key(name) + serializePhp(item)
  }
  return `a:${count}:{${body}}`
}

/**
 * PHP's serialize() of plain data, to build what a Laravel app stored (`encrypt($x)` is
 * `encryptLaravel(serializePhp(x), key)`; a session payload is `base64(serializePhp(attributes))`).
 * An integral number within 2^53 is a PHP int, any other number (and -0) a float.
 */
export function serializePhp(value: PhpSerializable): string {
  if (value === null) return 'N;'
  if (typeof value === 'boolean') return `b:${value ? 1 : 0};`
  if (typeof value === 'bigint') return `i:${value};`
  if (typeof value === 'number') {
    // -0 has no PHP int: it was a float.
    return Number.isSafeInteger(value) && !Object.is(value, -0) ? `i:${value};` : `d:${phpFloat(value)};`
  }
  if (typeof value === 'string') return string(value)
  if (Array.isArray(value)) return entries(value.map((item, index) => [index, item] as const))
  if (value instanceof Map) return entries(value)
  return entries(Object.entries(value))
}
