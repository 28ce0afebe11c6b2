import { createHash } from 'node:crypto'
import { stringifySetCookie } from 'cookie'
import { LRUCache } from 'lru-cache'
import type { Config } from '../../config.ts'
import type { Db } from '../../db/client.ts'
import type { Clock } from '../../lib/clock.ts'
import { readLaravelCookie } from '../../lib/laravel-compat/cookies.ts'
import { rememberCookieName } from '../../lib/laravel-compat/session-guard.ts'
import type { Cookies, ForeignCookies, SessionAdoption } from '../../lib/sessions/foreign-cookies.ts'
import { createImportedUsersRepository } from './imported-users.repository.ts'
import { rememberedUser } from './legacy-remember.ts'
import { legacySessionToken } from './legacy-session-token.ts'

// The longest cookie or header value worth decrypting: Laravel's session, XSRF and remember cookies
// are 300 to 600 characters, percent-encoded. Anything longer is refused unread.
export const MAX_LEGACY_COOKIE_LENGTH = 1024
const XSRF = 'XSRF-TOKEN'

type Started = { sessionToken: string; rememberToken: string }

/**
 * The Laravel original's cookies, while LARAVEL_COOKIES_UNTIL lasts: its session cookie continues the
 * session `import:laravel --sessions` made for it (legacySessionToken), its remember cookie signs its
 * user in as "remember me" does, and its XSRF-TOKEN passes the CSRF check. Undefined (nothing on the
 * request path) unless a window and a key are configured. Only a cookie one of the old keys opens
 * costs more than a look at its name and length: one that none opens costs one MAC or tag check per
 * key, is left as it is (a key fixed in the configuration still opens it), and stores nothing.
 */
export function createLegacyCookies({
  db,
  clock,
  config,
}: {
  db: Db
  clock: Clock
  config: Pick<Config, 'appKey' | 'laravel' | 'session'>
}): ForeignCookies | undefined {
  const { appKey, previousKeys, sessionCookie, cookiesUntilMs } = config.laravel
  if (cookiesUntilMs === undefined || !appKey) return undefined
  // APP_KEY first, then the previous keys, as Laravel tries them (each checked by the config already).
  const keys = `${appKey},${previousKeys ?? ''}`.split(',').filter((key) => key !== '')
  const until = cookiesUntilMs
  const rememberCookie = rememberCookieName()
  const imported = createImportedUsersRepository({ db })

  const open = () => clock.nowMs() < until
  const opened = (name: string, value: string | undefined): string | undefined =>
    value === undefined || value.length === 0 || value.length > MAX_LEGACY_COOKIE_LENGTH
      ? undefined
      : readLaravelCookie(name, value, keys)
  // Expired where the original set them: path /, the same SESSION_DOMAIN.
  const expired = (name: string) =>
    stringifySetCookie({
      name,
      value: '',
      path: '/',
      domain: config.session.domain,
      secure: config.session.secureCookie,
      sameSite: 'lax',
      maxAge: 0,
      expires: new Date(0),
    })

  // Requests that arrive together with one remember cookie (the app's first burst) share one new
  // session and device, on this instance, for a few seconds; keyed by the cookie as sent, so two
  // browsers of one user (the same remember_token) still get a device each.
  const starting = new LRUCache<string, Promise<Started | undefined>>({ max: 10_000, ttl: 10_000 })
  const startFrom = (value: string, recaller: string, adoption: SessionAdoption) => {
    const key = createHash('sha256').update(value).digest('hex')
    let started = starting.get(key)
    if (!started) {
      started = rememberedUser(db, recaller, keys).then((user) => user && adoption.startRemembered(user))
      starting.set(key, started)
      started.catch(() => starting.delete(key))
    }
    return started
  }

  return {
    carries: (cookies: Cookies) =>
      (cookies[sessionCookie] !== undefined || cookies[rememberCookie] !== undefined) && open(),

    async restore(cookies, adoption) {
      const lines: string[] = []
      const oldSessionId = opened(sessionCookie, cookies[sessionCookie])
      if (oldSessionId !== undefined) {
        lines.push(expired(sessionCookie))
        // The original's remember cookie, if any, stays: once this session ends it signs the user in.
        if (await adoption.adopt(legacySessionToken(oldSessionId, config.appKey))) return lines
      }
      const value = cookies[rememberCookie]
      const recaller = value === undefined ? undefined : opened(rememberCookie, value)
      if (value === undefined || recaller === undefined) return lines
      lines.push(expired(rememberCookie))
      const started = await startFrom(value, recaller, adoption)
      if (started) await adoption.adopt(started.sessionToken, started.rememberToken)
      return lines
    },

    csrfToken: (header) => (open() ? opened(XSRF, header) : undefined),

    async forgetUser(userId) {
      if (open()) await imported.forgetRememberToken(userId)
    },
  }
}
