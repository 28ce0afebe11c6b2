import { createHmac } from 'node:crypto'
import { decryptLaravel, encryptLaravel, type LaravelCipherMode, LaravelDecryptError } from './encrypter.ts'
import { laravelKeyBytes } from './keys.ts'

// Laravel's EncryptCookies writes every cookie (but those it is told to skip) as
// encryptString(CookieValuePrefix::create(name, APP_KEY) . value): the prefix binds the value to the
// cookie's name, so one cookie's value cannot be replayed as another's.
//
// The session cookie's name is config('session.cookie'): SESSION_COOKIE, else derived from APP_NAME:
// Str::slug(APP_NAME, '_').'_session' in Laravel 11 and 12's config/session.php (APP_NAME "My App"
// gives my_app_session, and an unset one laravel_session), Str::snake(APP_NAME).'_session' in
// Laravel 13's. The app's own config/session.php decides; take the name from the running app.

const PREFIX_LENGTH = 41

/** CookieValuePrefix::create: the hex HMAC-SHA1 of `<name>v2` under the key's bytes, then `|`. */
export function cookieValuePrefix(name: string, key: string): string {
  return `${createHmac('sha1', laravelKeyBytes(key)).update(`${name}v2`).digest('hex')}|`
}

/**
 * The value inside a cookie Laravel encrypted (a session id, `id|token|hash` for the remember cookie,
 * the CSRF token for XSRF-TOKEN), or undefined when no key opens it or its prefix is not this
 * name's under one of the keys (CookieValuePrefix::validate). `value` as the cookie parser gives it;
 * one still percent-encoded, as in the Cookie header, is decoded first.
 */
export function readLaravelCookie(name: string, value: string, keys: readonly string[]): string | undefined {
  let payload = value
  if (payload.includes('%')) {
    try {
      payload = decodeURIComponent(payload)
    } catch {
      return undefined
    }
  }
  let plaintext: string
  try {
    plaintext = decryptLaravel(payload, keys)
  } catch (error) {
    if (error instanceof LaravelDecryptError) return undefined
    throw error
  }
  const prefix = plaintext.slice(0, PREFIX_LENGTH)
  return keys.some((key) => cookieValuePrefix(name, key) === prefix)
    ? plaintext.slice(PREFIX_LENGTH)
    : undefined
}

/** The cookie value EncryptCookies would send for `value` under `key` (for fixtures), not percent-encoded. */
export function encryptLaravelCookie(
  name: string,
  value: string,
  key: string,
  options: { mode?: LaravelCipherMode; iv?: Buffer } = {},
): string {
  return encryptLaravel(cookieValuePrefix(name, key) + value, key, options)
}
