import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { unserializePhp } from './php-unserialize.ts'

// What Illuminate\Auth\SessionGuard writes: its names carry sha1(static::class), the guard's class
// name, so they are the same in every Laravel app that uses the stock guard.

export const SESSION_GUARD_CLASS = 'Illuminate\\Auth\\SessionGuard'

const classHash = createHash('sha1').update(SESSION_GUARD_CLASS).digest('hex')

/** The remember-me cookie's name, SessionGuard::getRecallerName(): `remember_web_<sha1>`. */
export function rememberCookieName(guard = 'web'): string {
  return `remember_${guard}_${classHash}`
}

/** The session attribute holding the signed-in user's id, SessionGuard::getName(): `login_web_<sha1>`. */
export function sessionLoginKey(guard = 'web'): string {
  return `login_${guard}_${classHash}`
}

/** The session attribute AuthenticateSession (Laravel's and Sanctum's) keeps the password hash under. */
export function sessionPasswordHashKey(guard = 'web'): string {
  return `password_hash_${guard}`
}

export interface RememberCookie {
  /** The user's id, as text. */
  id: string
  /** The user's `remember_token` column at the time. */
  token: string
  /** The password hash, or since Laravel 12.45 its HMAC (see passwordHashMatches). */
  hash: string
}

// What PHP's trim() strips: a part made only of these is blank to Recaller.
const TRIMMED = new Set([' ', '\t', '\n', '\r', '\0', '\x0B'])
const blank = (text: string) => [...text].every((char) => TRIMMED.has(char))

/**
 * The remember cookie's value, `id|token|hash` (once opened by readLaravelCookie), read as
 * Illuminate\Auth\Recaller reads it: undefined unless it has three `|`-separated parts with a
 * non-blank id and token; a PHP-serialized string (older Laravel) is unwrapped first.
 */
export function parseRememberCookie(value: string): RememberCookie | undefined {
  let text = value
  if (/^s:\d+:"/.test(value)) {
    try {
      const inner = unserializePhp(value)
      if (typeof inner === 'string') text = inner
    } catch {
      // Not serialized after all: Recaller keeps the raw value too.
    }
  }
  const [id, token, hash] = text.split('|')
  if (id === undefined || token === undefined || hash === undefined) return undefined
  if (blank(id) || blank(token)) return undefined
  return { id, token, hash }
}

function equal(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8')
  const right = Buffer.from(b, 'utf8')
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Whether the hash a remember cookie or a session's password_hash_web carries is that of the user's
 * current password, as AuthenticateSession checks it: since Laravel 12.45 it is
 * hash_hmac('sha256', passwordHash, config('app.key')), keyed by the APP_KEY text itself
 * (`base64:...` included); before, and in Sanctum's, the password hash itself. Both are accepted.
 */
export function passwordHashMatches(stored: string, passwordHash: string, appKey: string): boolean {
  const mac = createHmac('sha256', Buffer.from(appKey, 'utf8')).update(passwordHash).digest('hex')
  const macMatches = equal(mac, stored)
  const rawMatches = equal(passwordHash, stored)
  return macMatches || rawMatches
}
