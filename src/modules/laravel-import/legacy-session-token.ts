import { createHmac } from 'node:crypto'

/**
 * The session token this service gives a browser that comes back with the Laravel original's
 * session `oldSessionId` (its cookie opened with the old key). Derived rather than stored: the
 * import creates the session under its digest (`hashSessionToken`), and every first request that
 * carries the old cookie, however many race, arrives at the same session and the same new cookie.
 * Only a holder of this service's APP_KEY can derive it, as only they can seal the new cookie.
 */
export function legacySessionToken(oldSessionId: string, appKey: string): string {
  return createHmac('sha256', appKey)
    .update(`laravel-session|${oldSessionId}`)
    .digest('base64url')
    .slice(0, 40)
}
