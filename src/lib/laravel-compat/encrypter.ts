import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  type KeyObject,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto'
import { laravelKeyBytes } from './keys.ts'

// Illuminate\Encryption\Encrypter's payload: base64 of the JSON {iv, value, mac, tag}, each field
// itself base64 (`value` is what openssl_encrypt returns without OPENSSL_RAW_DATA). CBC carries an
// HMAC-SHA256 over iv.value in `mac` and an empty `tag`; GCM its 16-byte tag and an empty `mac`.
// Laravel before 9 wrote no `tag` field at all.

export type LaravelCipherMode = 'cbc' | 'gcm'

const IV_BYTES: Record<LaravelCipherMode, number> = { cbc: 16, gcm: 12 }
const TAG_BYTES = 16
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Why a Laravel payload was refused: `malformed` (not an encrypter payload), `no-key` (no given key opens it). */
export class LaravelDecryptError extends Error {
  readonly reason: 'malformed' | 'no-key'
  constructor(reason: 'malformed' | 'no-key', message: string) {
    super(message)
    this.name = 'LaravelDecryptError'
    this.reason = reason
  }
}

const malformed = (why: string) =>
  new LaravelDecryptError('malformed', `Not a Laravel encrypted payload: ${why}`)

interface Payload {
  iv: string
  value: string
  mac: string
  tag: string
}

/** A key ready for the ciphers: its key object and its AES size. */
interface OpenedKey {
  object: KeyObject
  bits: 128 | 256
}

// The few keys a process uses (the original's APP_KEY and previous keys), each made into a key
// object once: Node checks a raw key buffer by trying it as a key object first, which costs more
// than the cipher itself on values this short (an import opens two per user).
const openedKeys = new Map<string, OpenedKey>()
const MAX_OPENED_KEYS = 64

function openKey(key: string): OpenedKey {
  let opened = openedKeys.get(key)
  if (!opened) {
    const bytes = laravelKeyBytes(key)
    opened = { object: createSecretKey(bytes), bits: bytes.length === 16 ? 128 : 256 }
    if (openedKeys.size >= MAX_OPENED_KEYS) openedKeys.clear()
    openedKeys.set(key, opened)
  }
  return opened
}

function macOf(iv: string, value: string, key: OpenedKey): Buffer {
  return createHmac('sha256', key.object)
    .update(iv + value)
    .digest()
}

function readPayload(text: string): Payload {
  let json: unknown
  try {
    json = JSON.parse(Buffer.from(text, 'base64').toString('utf8'))
  } catch {
    throw malformed('not base64 of JSON')
  }
  const fields = json as Partial<Record<keyof Payload, unknown>> | null
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields))
    throw malformed('not a JSON object')
  const { iv, value, mac, tag = '' } = fields
  if (typeof iv !== 'string' || typeof value !== 'string' || typeof mac !== 'string') {
    throw malformed('iv, value and mac must be strings')
  }
  if (typeof tag !== 'string' && tag !== null) throw malformed('tag must be a string')
  return { iv, value, mac, tag: tag ?? '' }
}

/** Decrypts `value` (base64); with a tag, as AES-GCM. Throws when the tag or the padding is wrong. */
function decryptWith(key: OpenedKey, iv: Buffer, value: string, tag?: Buffer): Buffer {
  const decipher = tag
    ? createDecipheriv(`aes-${key.bits}-gcm`, key.object, iv, { authTagLength: TAG_BYTES }).setAuthTag(tag)
    : createDecipheriv(`aes-${key.bits}-cbc`, key.object, iv)
  return Buffer.concat([decipher.update(Buffer.from(value, 'base64')), decipher.final()])
}

/**
 * Opens a payload of Laravel's encrypter with the first of `keys` (APP_KEY-style strings, see
 * laravelKeys) that opens it, as `decryptString` does: the plaintext as UTF-8, not unserialized
 * (`encrypt($x)` values are PHP-serialized: pass them to unserializePhp). A payload with a tag is
 * AES-GCM, one without is AES-CBC with its MAC; the key's length picks AES-128 or AES-256.
 * Throws LaravelDecryptError.
 */
export function decryptLaravel(payload: string, keys: readonly string[]): string {
  const { iv, value, mac, tag } = readPayload(payload)
  const mode: LaravelCipherMode = tag === '' ? 'cbc' : 'gcm'
  if (!STRICT_BASE64.test(iv) || Buffer.from(iv, 'base64').length !== IV_BYTES[mode]) {
    throw malformed(`the iv is not ${IV_BYTES[mode]} bytes of base64`)
  }
  const ivBytes = Buffer.from(iv, 'base64')
  const candidates = keys.map(openKey)

  if (mode === 'gcm') {
    // The whole tag or nothing: GCM would also check a shortened one, far easier to forge.
    const tagBytes = Buffer.from(tag, 'base64')
    if (!STRICT_BASE64.test(tag) || tagBytes.length !== TAG_BYTES) throw malformed('the tag is not 16 bytes')
    for (const key of candidates) {
      try {
        return decryptWith(key, ivBytes, value, tagBytes).toString('utf8')
      } catch {
        // The tag does not verify under this key: try the next, as Laravel does.
      }
    }
    throw new LaravelDecryptError('no-key', 'No given key opens the payload (GCM tag invalid)')
  }

  // Every key's MAC is computed and compared in constant time, the first match kept, as Laravel does:
  // the time taken does not tell which key matched.
  const given = Buffer.from(mac, 'utf8')
  let opening: OpenedKey | undefined
  for (const key of candidates) {
    const expected = Buffer.from(macOf(iv, value, key).toString('hex'), 'utf8')
    const valid = expected.length === given.length && timingSafeEqual(expected, given)
    if (valid && !opening) opening = key
  }
  if (!opening) throw new LaravelDecryptError('no-key', 'No given key opens the payload (MAC invalid)')
  try {
    return decryptWith(opening, ivBytes, value).toString('utf8')
  } catch {
    // The MAC held, so whoever had the key wrote a value that does not decrypt.
    throw malformed('the value does not decrypt under the key its MAC names')
  }
}

/**
 * Encrypts `plaintext` as Laravel's `encryptString` does (so `encrypt($x)` is
 * `encryptLaravel(serializePhp(x), key)`), in its exact JSON and field order. CBC by default
 * (Laravel's `AES-256-CBC`); the key's length picks AES-128 or AES-256. `iv` fixes the IV, for
 * reproducing a known payload in tests only.
 */
export function encryptLaravel(
  plaintext: string,
  key: string,
  options: { mode?: LaravelCipherMode; iv?: Buffer } = {},
): string {
  const mode = options.mode ?? 'cbc'
  const opened = openKey(key)
  const iv = options.iv ?? randomBytes(IV_BYTES[mode])
  if (iv.length !== IV_BYTES[mode]) throw new RangeError(`The ${mode} iv must be ${IV_BYTES[mode]} bytes`)
  const ivText = iv.toString('base64')
  let value: string
  let mac = ''
  let tag = ''
  if (mode === 'gcm') {
    const cipher = createCipheriv(`aes-${opened.bits}-gcm`, opened.object, iv, { authTagLength: TAG_BYTES })
    value = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]).toString('base64')
    tag = cipher.getAuthTag().toString('base64')
  } else {
    const cipher = createCipheriv(`aes-${opened.bits}-cbc`, opened.object, iv)
    value = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]).toString('base64')
    mac = macOf(ivText, value, opened).toString('hex')
  }
  return Buffer.from(JSON.stringify({ iv: ivText, value, mac, tag }), 'utf8').toString('base64')
}
