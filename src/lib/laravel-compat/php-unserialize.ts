// A safe subset of PHP's unserialize(): values are read, never instantiated. Lengths are byte
// counts (PHP strings are bytes; text is UTF-8), so the input is read as bytes.

export type PhpKey = number | string
/** A PHP array: ordered, keys int or string (numeric strings become ints, as PHP makes them). */
export type PhpArray = Map<PhpKey, PhpValue>
export type PhpValue = null | boolean | number | bigint | string | PhpArray | PhpOpaque

/**
 * What stands for a value not read: an object (`O:`, `C:`), an enum case (`E:`) or a reference to
 * an earlier value (`r:`, `R:`). Only its class, case or slot is kept; nothing is constructed.
 */
export class PhpOpaque {
  readonly kind: 'object' | 'enum' | 'reference'
  readonly name: string
  constructor(kind: 'object' | 'enum' | 'reference', name: string) {
    this.kind = kind
    this.name = name
  }
}

/** Malformed or over-limit serialized data; the message names the byte offset, never the data. */
export class PhpUnserializeError extends Error {
  readonly offset: number
  constructor(offset: number, why: string) {
    super(`Malformed PHP serialized data at byte ${offset}: ${why}`)
    this.name = 'PhpUnserializeError'
    this.offset = offset
  }
}

export interface UnserializeLimits {
  /** Nesting of arrays and objects; 64 by default. */
  maxDepth?: number
  /** Size of the whole input in bytes; 16 MiB by default. */
  maxBytes?: number
}

const INTEGER = /^[+-]?\d+$/
const FLOAT = /^[+-]?(?:\d+|\d*\.\d+|\d+\.\d*)(?:[eE][+-]?\d+)?$/
// A string key PHP stores as an int: canonical decimal, no leading zero, no "-0".
const NUMERIC_KEY = /^(?:0|-?[1-9]\d*)$/
// The smallest array element, `i:0;N;`: a declared count above remaining / 6 cannot be honest.
const MIN_ELEMENT_BYTES = 6
const MAX_TOKEN_BYTES = 40

const byte = (char: string) => char.charCodeAt(0)

class Reader {
  pos = 0
  readonly bytes: Buffer
  readonly maxDepth: number
  constructor(bytes: Buffer, maxDepth: number) {
    this.bytes = bytes
    this.maxDepth = maxDepth
  }

  fail(why: string, at = this.pos): never {
    throw new PhpUnserializeError(at, why)
  }

  get remaining(): number {
    return this.bytes.length - this.pos
  }

  expect(char: string): void {
    if (this.bytes[this.pos] !== byte(char)) this.fail(`expected "${char}"`)
    this.pos++
  }

  /** The short text up to `end` (a number or a slot), bounded so a missing end is found at once. */
  token(end: string): string {
    const length = this.bytes.subarray(this.pos, this.pos + MAX_TOKEN_BYTES + 1).indexOf(byte(end))
    if (length < 0) this.fail(`expected a value ended by "${end}"`)
    const text = this.bytes.toString('latin1', this.pos, this.pos + length)
    this.pos += length + 1
    return text
  }

  /** A declared length or count, refused at once when the rest of the input cannot hold it. */
  length(end: string, unit: number): number {
    const at = this.pos
    const text = this.token(end)
    if (!/^\d+$/.test(text)) this.fail('expected a length', at)
    const length = Number(text)
    if (length * unit > this.remaining) this.fail('declared length exceeds the data', at)
    return length
  }

  /** `"<bytes>"` of a declared byte length. */
  quoted(length: number): Buffer {
    this.expect('"')
    if (length > this.remaining) this.fail('declared length exceeds the data')
    const slice = this.bytes.subarray(this.pos, this.pos + length)
    this.pos += length
    this.expect('"')
    return slice
  }
}

function readInteger(reader: Reader): number | bigint {
  const at = reader.pos
  const text = reader.token(';')
  if (!INTEGER.test(text)) reader.fail('expected an integer', at)
  const value = BigInt(text)
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value
}

function readFloat(reader: Reader): number {
  const at = reader.pos
  const text = reader.token(';')
  if (text === 'INF') return Number.POSITIVE_INFINITY
  if (text === '-INF') return Number.NEGATIVE_INFINITY
  if (text === 'NAN') return Number.NaN
  if (!FLOAT.test(text)) reader.fail('expected a float', at)
  return Number(text)
}

function readKey(reader: Reader): PhpKey {
  const at = reader.pos
  const type = String.fromCharCode(reader.bytes[reader.pos] ?? 0)
  reader.pos++
  reader.expect(':')
  if (type === 'i') {
    const key = readInteger(reader)
    if (typeof key === 'bigint') reader.fail('integer key out of range', at)
    return key
  }
  if (type !== 's') reader.fail('an array key must be an int or a string', at)
  const text = reader.quoted(reader.length(':', 1)).toString('utf8')
  reader.expect(';')
  return NUMERIC_KEY.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text
}

/** `count:{key value ...}`, the body of an array or an object's properties. */
function readEntries(reader: Reader, depth: number): PhpArray {
  if (depth >= reader.maxDepth) reader.fail('nested too deeply')
  const count = reader.length(':', MIN_ELEMENT_BYTES)
  reader.expect('{')
  const entries: PhpArray = new Map()
  for (let i = 0; i < count; i++) {
    const key = readKey(reader)
    entries.set(key, readValue(reader, depth + 1))
  }
  reader.expect('}')
  return entries
}

function readName(reader: Reader): string {
  return reader.quoted(reader.length(':', 1)).toString('utf8')
}

function readValue(reader: Reader, depth: number): PhpValue {
  const at = reader.pos
  const type = String.fromCharCode(reader.bytes[reader.pos] ?? 0)
  reader.pos++
  if (type === 'N') {
    reader.expect(';')
    return null
  }
  reader.expect(':')
  switch (type) {
    case 'b': {
      const text = reader.token(';')
      if (text !== '0' && text !== '1') reader.fail('expected 0 or 1', at)
      return text === '1'
    }
    case 'i':
      return readInteger(reader)
    case 'd':
      return readFloat(reader)
    case 's': {
      const text = reader.quoted(reader.length(':', 1)).toString('utf8')
      reader.expect(';')
      return text
    }
    case 'a':
      return readEntries(reader, depth)
    case 'O': {
      // Properties are read (to find the object's end) and dropped.
      const name = readName(reader)
      reader.expect(':')
      readEntries(reader, depth)
      return new PhpOpaque('object', name)
    }
    case 'C': {
      // A Serializable class: its own data, of a declared length, skipped.
      const name = readName(reader)
      reader.expect(':')
      const length = reader.length(':', 1)
      reader.expect('{')
      if (length > reader.remaining) reader.fail('declared length exceeds the data')
      reader.pos += length
      reader.expect('}')
      return new PhpOpaque('object', name)
    }
    case 'E': {
      const name = readName(reader)
      reader.expect(';')
      return new PhpOpaque('enum', name)
    }
    case 'r':
    case 'R': {
      const slot = reader.token(';')
      if (!/^\d+$/.test(slot)) reader.fail('expected a slot number', at)
      return new PhpOpaque('reference', slot)
    }
    default:
      return reader.fail('unknown type', at)
  }
}

/**
 * Reads PHP's serialize() output: null, bool, int (a bigint beyond 2^53), float, string, arrays
 * (as ordered Maps) and, as PhpOpaque markers, objects, enums and references. The whole input must
 * be one value. Throws PhpUnserializeError.
 */
export function unserializePhp(input: string | Uint8Array, limits: UnserializeLimits = {}): PhpValue {
  const maxBytes = limits.maxBytes ?? 16 * 1024 * 1024
  const size = typeof input === 'string' ? Buffer.byteLength(input, 'utf8') : input.byteLength
  if (size > maxBytes) throw new PhpUnserializeError(0, `input larger than ${maxBytes} bytes`)
  const bytes =
    typeof input === 'string'
      ? Buffer.from(input, 'utf8')
      : Buffer.from(input.buffer, input.byteOffset, input.byteLength)
  const reader = new Reader(bytes, limits.maxDepth ?? 64)
  const value = readValue(reader, 0)
  if (reader.remaining > 0) reader.fail('data after the value')
  return value
}
