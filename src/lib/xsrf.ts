import { decryptSecret, encryptSecret } from './encryption.ts'

// Bound to its purpose, as Laravel prefixes a cookie's plaintext with an HMAC of its name: a value
// sealed for something else does not open as an XSRF token.
const PURPOSE = 'XSRF-TOKEN|'
// Far longer than any sealed token (about 140 characters): anything longer is not worth decrypting.
const MAX_SEALED_LENGTH = 512

/**
 * The XSRF-TOKEN cookie's value for a session's CSRF token: sealed with APP_KEY (AES-256-GCM, a
 * fresh IV each time), so the cookie that pages of sibling hosts may read is never the token that
 * `_token` or X-CSRF-TOKEN accept; only X-XSRF-TOKEN takes it, and a foreign page can send that
 * header only after a CORS preflight that is refused.
 */
export function sealXsrfToken(csrfToken: string, appKey: string): string {
  return encryptSecret(PURPOSE + csrfToken, appKey)
}

/** The CSRF token inside an X-XSRF-TOKEN value, or undefined when it is not one this key sealed. */
export function unsealXsrfToken(sealed: string, appKey: string): string | undefined {
  if (sealed.length > MAX_SEALED_LENGTH) return undefined
  let plain: string
  try {
    plain = decryptSecret(sealed, appKey)
  } catch {
    return undefined
  }
  return plain.startsWith(PURPOSE) ? plain.slice(PURPOSE.length) : undefined
}
