import { randomBytes } from 'node:crypto'
import { parseCookie, stringifySetCookie } from 'cookie'
import { type Clock, unixSeconds } from '../../lib/clock.ts'
import { decryptSecret, encryptSecret } from '../../lib/encryption.ts'

/**
 * OWASP's device cookie ("Slow down online guessing attacks with device cookies"): set on a browser
 * where a user signed in, it lets that browser past the user's login back-off.
 */
export const DEVICE_COOKIE = 'app_device'
/** How long a browser stays known after its last sign-in (each sign-in sets a new cookie). */
export const DEVICE_LIFETIME_SECONDS = 180 * 24 * 60 * 60

// Bound to its purpose, as the XSRF cookie is: a value sealed for something else does not open here.
const PURPOSE = 'app_device|'
// Far longer than any sealed device (about 120 characters): anything longer is not worth decrypting.
const MAX_SEALED_LENGTH = 512
const USER_ID = /^\d{1,15}$/

/** What a genuine device cookie names: the user who signed in on that browser, and the cookie's own random id. */
export interface DevicePass {
  userId: number
  nonce: string
}

/**
 * Device cookies sealed with APP_KEY (AES-256-GCM, so one that was altered or made elsewhere does
 * not open): `<user id>|<nonce>|<expiry>`. Nothing is stored when one is issued; the back-off
 * counts what is tried with each (auth.backoff.ts).
 */
export function createDeviceCookies(deps: {
  appKey: string
  clock: Clock
  /** The session cookie's attributes (SESSION_SECURE_COOKIE, SESSION_DOMAIN). */
  secure: boolean
  domain: string | undefined
}) {
  const { appKey, clock } = deps
  return {
    /** The Set-Cookie line of a new device cookie for `userId`: HttpOnly, SameSite=Lax, as the session's. */
    issue(userId: number): string {
      const expiresAt = unixSeconds(clock) + DEVICE_LIFETIME_SECONDS
      const nonce = randomBytes(16).toString('base64url')
      return stringifySetCookie({
        name: DEVICE_COOKIE,
        value: encryptSecret(`${PURPOSE}${userId}|${nonce}|${expiresAt}`, appKey),
        path: '/',
        sameSite: 'lax',
        secure: deps.secure,
        domain: deps.domain,
        httpOnly: true,
        maxAge: DEVICE_LIFETIME_SECONDS,
        expires: new Date(expiresAt * 1000),
      })
    },

    /** The device a Cookie header's device cookie names, when it is genuine and has not expired. */
    read(cookieHeader: string | undefined): DevicePass | undefined {
      const sealed = cookieHeader ? parseCookie(cookieHeader)[DEVICE_COOKIE] : undefined
      if (!sealed || sealed.length > MAX_SEALED_LENGTH) return undefined
      let plain: string
      try {
        plain = decryptSecret(sealed, appKey)
      } catch {
        return undefined
      }
      if (!plain.startsWith(PURPOSE)) return undefined
      const [userId = '', nonce = '', expiresAt = ''] = plain.slice(PURPOSE.length).split('|')
      if (!USER_ID.test(userId) || !nonce || !(Number(expiresAt) > unixSeconds(clock))) return undefined
      return { userId: Number(userId), nonce }
    },
  }
}

export type DeviceCookies = ReturnType<typeof createDeviceCookies>
