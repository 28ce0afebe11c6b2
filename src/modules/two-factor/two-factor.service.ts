import { createHash, randomInt, timingSafeEqual } from 'node:crypto'
import { Secret, TOTP } from 'otpauth'
import type { SessionPayload, UserRow } from '../../db/schema/index.ts'
import { type Clock, unixSeconds } from '../../lib/clock.ts'
import { decryptSecret, encryptSecret } from '../../lib/encryption.ts'
import { HttpError, ValidationError } from '../../lib/errors.ts'
import type { UsersService } from '../users/users.service.ts'

/** The name authenticator apps show above the code. */
export const TOTP_ISSUER = 'Trading App'
// Google2FA as Fortify configures it: SHA1, 6 digits, 30-second steps, one step either side.
const TOTP_OPTIONS = { algorithm: 'SHA1', digits: 6, period: 30 } as const
const TOTP_WINDOW = 1
// 160 bits, RFC 4226's recommended secret length (Fortify's default of 16 base32 characters is 80).
const SECRET_BYTES = 20
const RECOVERY_CODE_COUNT = 8
/** How long a right password waits for its second factor before the login has to start over. */
export const PENDING_LOGIN_SECONDS = 5 * 60

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

export type PendingLogin = NonNullable<SessionPayload['pendingLogin']>

/**
 * What a pending login remembers of the password it was started with: a digest of the stored hash,
 * which changes with every new password (reset, update, an admin's, a rehash), never the hash itself.
 */
export const credentialsStamp = (user: UserRow): string =>
  createHash('sha256').update(`pending-login:${user.password}`).digest('base64url')

/**
 * Whether `pending` can still be completed by `user`: not expired, and started with the password the
 * account has now. A login waiting for its code dies when the password changes.
 */
export function pendingLoginLive(pending: PendingLogin, user: UserRow, now: number): boolean {
  if (now - pending.startedAt > PENDING_LOGIN_SECONDS) return false
  return pending.userId === user.id && pending.credentials === credentialsStamp(user)
}

/**
 * What users.two_factor_recovery_codes holds: a SHA-256 per code, which is what a challenge checks,
 * and the same list sealed with APP_KEY, only so GET can show the codes again.
 */
interface StoredRecoveryCodes {
  hashes: string[]
  sealed: string
}

/** The stored recovery codes once read: their hashes and the codes themselves, in the same order. */
interface ReadRecoveryCodes {
  hashes: string[]
  codes: string[]
}

/** Whether each stored 2FA value can be read under the current APP_KEY (`none`: nothing stored). */
export interface TwoFactorReadability {
  secret: 'none' | 'readable' | 'unreadable'
  recoveryCodes: 'none' | 'readable' | 'unreadable'
}

const isStringArray = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string')

/** A user has to pass the challenge only once the secret is set and confirmed (Fortify's `confirm` option). */
export const twoFactorRequired = (user: UserRow): boolean =>
  user.twoFactorSecret !== null && user.twoFactorConfirmedAt !== null

const invalidCode = () => new HttpError(401, 'The provided two factor authentication code was invalid.')
const invalidRecoveryCode = () => new HttpError(401, 'The provided two factor recovery code was invalid.')
const invalidConfirmationCode = () =>
  ValidationError.withMessages({ code: ['The provided two factor authentication code was invalid.'] })

const sha256 = (value: string) => createHash('sha256').update(value).digest()

/** Str::random(10) . '-' . Str::random(10), as Fortify's RecoveryCode::generate. */
function newRecoveryCode(): string {
  const part = () => Array.from({ length: 10 }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('')
  return `${part()}-${part()}`
}

// PHP's rawurlencode, which google2fa applies to the label and issuer of the otpauth URL.
const rawUrlEncode = (value: string) =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

export function createTwoFactorService(deps: { users: UsersService; clock: Clock; appKey: string }) {
  const { users, clock, appKey } = deps

  function sealCodes(codes: string[]): string {
    const stored: StoredRecoveryCodes = {
      hashes: codes.map((code) => sha256(code).toString('hex')),
      sealed: encryptSecret(JSON.stringify(codes), appKey),
    }
    return JSON.stringify(stored)
  }

  /**
   * The stored recovery codes, or undefined when there are none or they cannot be read: the Laravel
   * original's format (an encrypted JSON list), codes sealed under another APP_KEY, or anything
   * malformed. Unreadable codes are no codes: none can be shown, none signs in.
   */
  function readStored(user: UserRow): ReadRecoveryCodes | undefined {
    if (!user.twoFactorRecoveryCodes) return undefined
    try {
      const stored = JSON.parse(user.twoFactorRecoveryCodes) as Partial<StoredRecoveryCodes> | null
      if (!stored || !isStringArray(stored.hashes) || typeof stored.sealed !== 'string') return undefined
      const codes: unknown = JSON.parse(decryptSecret(stored.sealed, appKey))
      if (!isStringArray(codes) || codes.length !== stored.hashes.length) return undefined
      if (!stored.hashes.every((hash) => /^[0-9a-f]{64}$/.test(hash))) return undefined
      return { hashes: stored.hashes, codes }
    } catch {
      return undefined
    }
  }

  const freshCodes = () => Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode)

  /**
   * Checks a TOTP code against the user's secret and burns its time step, so the same code (or an
   * earlier one) cannot be used again, even by two requests at once.
   */
  async function useTotpCode(user: UserRow, code: string): Promise<boolean> {
    if (!user.twoFactorSecret) return false
    const token = code.replace(/\s+/g, '')
    if (!/^\d{6}$/.test(token)) return false
    const secret = openSecret(user.twoFactorSecret)
    if (!secret) return false
    const timestamp = clock.nowMs()
    const delta = TOTP.validate({ token, secret, ...TOTP_OPTIONS, timestamp, window: TOTP_WINDOW })
    if (delta === null) return false
    const step = TOTP.counter({ period: TOTP_OPTIONS.period, timestamp }) + delta
    return users.claimTwoFactorStep(user.id, step)
  }

  /**
   * The stored secret, or undefined when it cannot be read: one sealed under another APP_KEY, or in
   * the Laravel original's format (an import must re-enrol those users). No code can match it.
   */
  function openSecret(stored: string): Secret | undefined {
    try {
      return Secret.fromBase32(decryptSecret(stored, appKey))
    } catch {
      return undefined
    }
  }

  /** Whether the user's stored secret and recovery codes can be read under the current APP_KEY. */
  function readability(user: UserRow): TwoFactorReadability {
    const state = (stored: string | null, readable: () => boolean) =>
      stored === null ? 'none' : readable() ? 'readable' : 'unreadable'
    return {
      secret: state(user.twoFactorSecret, () => openSecret(user.twoFactorSecret ?? '') !== undefined),
      recoveryCodes: state(user.twoFactorRecoveryCodes, () => readStored(user) !== undefined),
    }
  }

  /** Checks a recovery code and removes it; every stored hash is compared, so timing tells nothing. */
  async function useRecoveryCode(user: UserRow, code: string): Promise<boolean> {
    const stored = readStored(user)
    if (!stored) return false
    const presented = sha256(code.trim())
    let match = -1
    stored.hashes.forEach((hash, index) => {
      if (timingSafeEqual(presented, Buffer.from(hash, 'hex')) && match === -1) match = index
    })
    if (match === -1) return false
    const remaining = stored.codes.filter((_, index) => index !== match)
    // Compare-and-set on the column: of two requests racing with one code, one wins.
    return users.replaceRecoveryCodes(user.id, user.twoFactorRecoveryCodes ?? '', sealCodes(remaining))
  }

  return {
    /**
     * Starts (or restarts) setting up 2FA after the password is confirmed: a new secret, stored
     * encrypted and not yet confirmed, and 8 new recovery codes. The only answer with the secret.
     */
    async enable(user: UserRow, password: string | undefined) {
      if (password !== undefined) await users.confirmPassword(user, password)
      if (twoFactorRequired(user)) throw new HttpError(409, 'Two factor authentication is already enabled.')
      // The QR code library is loaded by the first enable, not at every start.
      const { default: QRCode } = await import('qrcode')
      const secret = new Secret({ size: SECRET_BYTES }).base32
      const recoveryCodes = freshCodes()
      await users.updateTwoFactor(user, {
        twoFactorSecret: encryptSecret(secret, appKey),
        twoFactorRecoveryCodes: sealCodes(recoveryCodes),
        twoFactorConfirmedAt: null,
        twoFactorLastStep: null,
      })
      const otpauthUrl =
        `otpauth://totp/${rawUrlEncode(TOTP_ISSUER)}:${rawUrlEncode(user.email)}?secret=${secret}` +
        `&issuer=${rawUrlEncode(TOTP_ISSUER)}&algorithm=SHA1&digits=6&period=30`
      const qrSvg = await QRCode.toString(otpauthUrl, {
        type: 'svg',
        width: 192,
        margin: 0,
        // Fortify's colours: rgb(45,55,72) on white.
        color: { dark: '#2d3748', light: '#ffffff' },
      })
      return { secret, otpauth_url: otpauthUrl, qr_svg: qrSvg, recovery_codes: recoveryCodes }
    },

    /** Turns 2FA on once the app proves it holds the secret; a wrong code (or no setup) is a 422 on `code`. */
    async confirm(user: UserRow, code: string): Promise<void> {
      if (!(await useTotpCode(user, code))) throw invalidConfirmationCode()
      if (user.twoFactorConfirmedAt) return
      await users.updateTwoFactor(user, { twoFactorConfirmedAt: clock.now() })
    },

    /** Turns 2FA off (the password confirmed): secret, codes and confirmation are gone. */
    async disable(user: UserRow, password: string | undefined): Promise<void> {
      if (password !== undefined) await users.confirmPassword(user, password)
      await users.updateTwoFactor(user, {
        twoFactorSecret: null,
        twoFactorRecoveryCodes: null,
        twoFactorConfirmedAt: null,
        twoFactorLastStep: null,
      })
    },

    /** The unused recovery codes, in clear; `[]` when 2FA was never set up (as Fortify) or they cannot be read. */
    recoveryCodes(user: UserRow): string[] {
      const stored = readStored(user)
      if (!user.twoFactorSecret || !stored) return []
      return stored.codes
    },

    readability,

    /**
     * A secret brought from elsewhere (the Laravel original's), stored as `enable` stores one; throws
     * when it is not base32, which no authenticator app could hold.
     */
    sealSecret(secret: string): string {
      const base32 = secret.trim().toUpperCase()
      if (!/^[A-Z2-7]+=*$/.test(base32) || Secret.fromBase32(base32).bytes.length < 10) {
        throw new Error('not a base32 TOTP secret')
      }
      return encryptSecret(base32, appKey)
    },

    /** Recovery codes brought from elsewhere, stored as `enable` stores them: each works once. */
    sealRecoveryCodes: (codes: string[]): string => sealCodes(codes),

    /**
     * Clears, on every account, the 2FA data the current APP_KEY cannot read (imported from the
     * Laravel original, or sealed under a rotated key): an unreadable secret takes the whole setup
     * with it (2FA is off until the user enrols again), unreadable recovery codes only themselves.
     * With `dryRun`, changes nothing. Answers the ids of the accounts concerned.
     */
    async clearUnreadable({ dryRun = false } = {}): Promise<{ secrets: number[]; recoveryCodes: number[] }> {
      const cleared = { secrets: [] as number[], recoveryCodes: [] as number[] }
      for (let afterId = 0; ; ) {
        const batch = await users.withTwoFactorData(afterId, 500)
        if (batch.length === 0) return cleared
        for (const user of batch) {
          afterId = user.id
          const { secret, recoveryCodes } = readability(user)
          if (secret === 'unreadable') {
            const done =
              dryRun ||
              (await users.updateTwoFactorIfUnchanged(user, {
                twoFactorSecret: null,
                twoFactorRecoveryCodes: null,
                twoFactorConfirmedAt: null,
                twoFactorLastStep: null,
              }))
            if (done) cleared.secrets.push(user.id)
          } else if (recoveryCodes === 'unreadable') {
            const done =
              dryRun || (await users.updateTwoFactorIfUnchanged(user, { twoFactorRecoveryCodes: null }))
            if (done) cleared.recoveryCodes.push(user.id)
          }
        }
      }
    },

    /** Replaces all recovery codes with 8 new ones; the old ones stop working at once. */
    async regenerateRecoveryCodes(user: UserRow): Promise<string[]> {
      if (!user.twoFactorSecret) throw new HttpError(409, 'Two factor authentication has not been enabled.')
      const codes = freshCodes()
      await users.updateTwoFactor(user, { twoFactorRecoveryCodes: sealCodes(codes) })
      return codes
    },

    /**
     * The session's pending login while it can still be completed (see pendingLoginLive); undefined
     * when there is none, it expired, or the account's password changed since it began.
     */
    async livePendingLogin(pending: PendingLogin | undefined): Promise<PendingLogin | undefined> {
      if (!pending) return undefined
      const user = await users.findById(pending.userId)
      return user && pendingLoginLive(pending, user, unixSeconds(clock)) ? pending : undefined
    },

    /**
     * Fortify's TwoFactorAuthenticatedSessionController: a recovery code, when sent, is tried first,
     * then the TOTP code. Answers the user to sign in; anything wrong (no, expired or dead pending
     * login, a wrong or used code) is the same 401.
     */
    async passChallenge(
      pending: PendingLogin | undefined,
      input: { code?: string; recovery_code?: string },
    ): Promise<UserRow> {
      const fail = input.recovery_code ? invalidRecoveryCode : invalidCode
      if (!pending) throw fail()
      const user = await users.findById(pending.userId)
      if (!user || !pendingLoginLive(pending, user, unixSeconds(clock))) throw fail()
      if (user.blockedAt || !twoFactorRequired(user)) throw fail()
      if (input.recovery_code && (await useRecoveryCode(user, input.recovery_code))) return user
      if (input.code && (await useTotpCode(user, input.code))) return user
      throw fail()
    },
  }
}

export type TwoFactorService = ReturnType<typeof createTwoFactorService>
