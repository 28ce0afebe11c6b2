/**
 * Laravel's APP_KEY as its EncryptionServiceProvider reads it: `base64:<32 bytes>` (what
 * `key:generate` writes) or the raw string itself. 16 bytes is an AES-128 key, 32 an AES-256 one.
 */
export function laravelKeyBytes(key: string): Buffer {
  const bytes = key.startsWith('base64:') ? Buffer.from(key.slice(7), 'base64') : Buffer.from(key, 'utf8')
  if (bytes.length !== 16 && bytes.length !== 32) {
    throw new RangeError('A Laravel key must hold 16 or 32 bytes (AES-128 or AES-256)')
  }
  return bytes
}

/**
 * The keys Laravel 11+ tries, in its order: APP_KEY, then APP_PREVIOUS_KEYS (comma-separated,
 * blanks dropped). Each is checked here so that a mistyped key fails at once, not as "no key opens it".
 */
export function laravelKeys(appKey: string, previousKeys = ''): string[] {
  const keys = [appKey, ...previousKeys.split(',').filter((key) => key !== '')]
  for (const key of keys) laravelKeyBytes(key)
  return keys
}
