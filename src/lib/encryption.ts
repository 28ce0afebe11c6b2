import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto'

// AES-256-GCM under the 32 bytes of APP_KEY: authenticated, so a tampered value fails to decrypt.
const ALGORITHM = 'aes-256-gcm'
const TAG_BYTES = 16

// A process has one APP_KEY (a test a few): each made into a key object once. Node checks a raw key
// buffer by trying it as a key object first, which costs more than the cipher itself on every
// XSRF-TOKEN sealed and opened.
const keys = new Map<string, KeyObject>()

function keyOf(appKey: string): KeyObject {
  let key = keys.get(appKey)
  if (!key) {
    const bytes = Buffer.from(appKey.replace(/^base64:/, ''), 'base64')
    if (bytes.length !== 32) throw new Error('APP_KEY must hold 32 bytes')
    key = createSecretKey(bytes)
    keys.set(appKey, key)
  }
  return key
}

/** Encrypts a secret for storage (2FA secrets): `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
export function encryptSecret(plain: string, appKey: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv(ALGORITHM, keyOf(appKey), iv)
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()])
  return ['v1', iv, cipher.getAuthTag(), body]
    .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
    .join('.')
}

/** Decrypts what encryptSecret made; throws when the value was altered or another key made it. */
export function decryptSecret(stored: string, appKey: string): string {
  const [version, iv, tag, body] = stored.split('.')
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('not an encrypted value')
  // The whole 16-byte tag: left unpinned, GCM also verifies a tag cut short (down to 4 bytes), which
  // a forger can guess far more easily.
  const decipher = createDecipheriv(ALGORITHM, keyOf(appKey), Buffer.from(iv, 'base64url'), {
    authTagLength: TAG_BYTES,
  })
  const tagBytes = Buffer.from(tag, 'base64url')
  if (tagBytes.length !== TAG_BYTES) throw new Error('not an encrypted value')
  decipher.setAuthTag(tagBytes)
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8')
}
