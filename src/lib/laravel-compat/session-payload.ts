import { decryptLaravel } from './encrypter.ts'
import { type PhpArray, type PhpValue, unserializePhp } from './php-unserialize.ts'

// Laravel's database session driver keeps base64_encode(<data>) in sessions.payload, where <data> is
// serialize($attributes) (or json_encode with session.serialization = json), and with
// SESSION_ENCRYPT=true encrypt(<data>): the encrypter's payload of that data serialized once more.
// Attributes of note: `_token` (the CSRF token), sessionLoginKey() (the user's id),
// sessionPasswordHashKey(), `_previous`, `_flash`.

export interface SessionPayloadOptions {
  /** The keys to open an encrypted payload with (laravelKeys); without them one is refused. */
  keys?: readonly string[]
  /** config('session.serialization'): `php` (Laravel's default) or `json`. */
  serialization?: 'php' | 'json'
}

/** A session payload that could not be read; `cause` is the LaravelDecryptError or PhpUnserializeError. */
export class SessionPayloadError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause })
    this.name = 'SessionPayloadError'
  }
}

// json_decode($data, true): objects and lists both become arrays, numeric string keys ints.
function fromJson(value: unknown): PhpValue {
  if (value === null || typeof value !== 'object') return value as PhpValue
  const entries = Array.isArray(value) ? value.entries() : Object.entries(value)
  const array: PhpArray = new Map()
  for (const [key, item] of entries) {
    const numeric =
      typeof key === 'string' && /^(?:0|-?[1-9]\d*)$/.test(key) && Number.isSafeInteger(Number(key))
    array.set(numeric ? Number(key) : key, fromJson(item))
  }
  return array
}

/** The attributes of a `sessions.payload` value, as Laravel's Store reads them. Throws SessionPayloadError. */
export function readSessionPayload(payload: string, options: SessionPayloadOptions = {}): PhpArray {
  let data: string | Buffer = Buffer.from(payload, 'base64')
  // An encrypted payload is base64 text of JSON ("eyJ"); plain data starts "a:" or "{".
  if (data.subarray(0, 3).toString('latin1') === 'eyJ') {
    if (!options.keys) throw new SessionPayloadError('The session payload is encrypted and no key was given')
    let inner: PhpValue
    try {
      inner = unserializePhp(decryptLaravel(data.toString('latin1'), options.keys))
    } catch (error) {
      throw new SessionPayloadError('The encrypted session payload could not be opened', error)
    }
    if (typeof inner !== 'string') throw new SessionPayloadError('The encrypted session data is not a string')
    data = inner
  }
  let attributes: PhpValue
  try {
    attributes =
      options.serialization === 'json' ? fromJson(JSON.parse(data.toString())) : unserializePhp(data)
  } catch (error) {
    throw new SessionPayloadError('The session payload could not be read', error)
  }
  if (!(attributes instanceof Map)) throw new SessionPayloadError('The session payload is not an array')
  return attributes
}
