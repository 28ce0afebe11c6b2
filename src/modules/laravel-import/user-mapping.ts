import { createHash } from 'node:crypto'
import { Type } from 'typebox'
import { decryptLaravel, LaravelDecryptError } from '../../lib/laravel-compat/encrypter.ts'
import { unserializePhp } from '../../lib/laravel-compat/php-unserialize.ts'
import { bcryptCostOf } from '../../lib/passwords.ts'
import { compileValidator } from '../../lib/validation.ts'
import type { ImportedUser } from '../users/users.service.ts'
import type { LaravelUser } from './sources/laravel-source.ts'

/** Why a user of the original is not imported. */
export type UserSkipReason =
  | 'duplicate-email'
  | 'invalid-email'
  | 'invalid-name'
  | 'unusable-password'
  | 'two-factor-key'
  | 'two-factor-unreadable'

export const USER_SKIP_REASONS: Record<UserSkipReason, string> = {
  'duplicate-email': 'another user has the email (case aside)',
  'invalid-email': 'the email is not a valid address',
  'invalid-name': 'the name is empty or longer than 255 characters',
  'unusable-password': 'the password column holds no bcrypt or argon2 hash',
  'two-factor-key': 'no given key opens the two-factor secret or recovery codes',
  'two-factor-unreadable': 'the two-factor secret or recovery codes are not what Fortify writes',
}

/** A user of the original as this service will hold them, but for the photo (copied separately). */
export interface MappedUser {
  oldId: number
  user: Omit<ImportedUser, 'profilePhotoPath'>
  /** Jetstream's path on the old public disk, to copy. */
  oldPhotoPath: string | null
  rememberTokenDigest: string | null
  legacyPasswordHash: string
}

export interface UserMappingContext {
  /** The original's APP_KEY and APP_PREVIOUS_KEYS (laravelKeys). */
  keys: readonly string[]
  /** The two-factor module's storage of a secret and of recovery codes, under this APP_KEY. */
  sealSecret(secret: string): string
  sealRecoveryCodes(codes: string[]): string
  /** Whether the original has `two_factor_confirmed_at` (Fortify since 1.11 with `confirm`). */
  confirmation: boolean
  now: Date
}

export type UserMapping = { mapped: MappedUser } | { skip: UserSkipReason }

const checkIdentity = compileValidator(
  Type.Object({
    name: Type.String({ minLength: 1, maxLength: 255 }),
    email: Type.String({ minLength: 1, maxLength: 255, format: 'email' }),
  }),
)

class Unreadable extends Error {}

const usablePasswordHash = (hash: string) =>
  (/^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/.test(hash) && bcryptCostOf(hash) !== undefined) ||
  /^\$argon2id?\$/.test(hash)

/** `decrypt($value)` as Fortify reads its columns: the payload opened, then unserialized (a string). */
function openEncrypted(payload: string, keys: readonly string[]): string {
  const plain = decryptLaravel(payload.trim(), keys)
  let value: unknown
  try {
    value = unserializePhp(plain)
  } catch {
    // Written with encryptString (not serialized): the plaintext is the value.
    return plain
  }
  if (typeof value !== 'string') throw new Unreadable('not a string')
  return value
}

function recoveryCodesOf(payload: string, keys: readonly string[]): string[] {
  let codes: unknown
  try {
    codes = JSON.parse(openEncrypted(payload, keys))
  } catch (error) {
    if (error instanceof LaravelDecryptError) throw error
    throw new Unreadable('not JSON')
  }
  if (!Array.isArray(codes) || !codes.every((code) => typeof code === 'string' && code.trim() !== '')) {
    throw new Unreadable('not a list of codes')
  }
  return codes
}

/** Fortify's two-factor columns, opened with the old keys and sealed as this service stores them. */
function twoFactorOf(row: LaravelUser, context: UserMappingContext) {
  const none = { twoFactorSecret: null, twoFactorRecoveryCodes: null, twoFactorConfirmedAt: null }
  if (!row.twoFactorSecret?.trim()) return none
  const secret = context.sealSecret(openEncrypted(row.twoFactorSecret, context.keys))
  const codes = row.twoFactorRecoveryCodes?.trim()
    ? context.sealRecoveryCodes(recoveryCodesOf(row.twoFactorRecoveryCodes, context.keys))
    : null
  // Without the confirmation column, Fortify took a stored secret as enabled; with it, only once
  // confirmed (an unconfirmed secret stays unconfirmed: the user can still finish the setup).
  const confirmedAt = context.confirmation ? row.twoFactorConfirmedAt : context.now
  return { twoFactorSecret: secret, twoFactorRecoveryCodes: codes, twoFactorConfirmedAt: confirmedAt }
}

/** A user of the original as this service will hold them, or why they cannot be imported. */
export function mapLaravelUser(row: LaravelUser, context: UserMappingContext): UserMapping {
  const name = row.name?.trim() ?? ''
  const email = row.email?.trim() ?? ''
  const problems = checkIdentity({ name, email })
  if (problems.email) return { skip: 'invalid-email' }
  if (problems.name) return { skip: 'invalid-name' }
  const password = row.password ?? ''
  if (!usablePasswordHash(password)) return { skip: 'unusable-password' }

  let twoFactor: ReturnType<typeof twoFactorOf>
  try {
    twoFactor = twoFactorOf(row, context)
  } catch (error) {
    const noKey = error instanceof LaravelDecryptError && error.reason === 'no-key'
    return { skip: noKey ? 'two-factor-key' : 'two-factor-unreadable' }
  }

  const createdAt = row.createdAt ?? context.now
  const token = row.rememberToken
  return {
    mapped: {
      oldId: row.id,
      user: {
        name,
        email,
        passwordHash: password,
        isAdmin: row.isAdmin,
        emailVerifiedAt: row.emailVerifiedAt,
        ...twoFactor,
        createdAt,
        updatedAt: row.updatedAt ?? createdAt,
      },
      oldPhotoPath: row.profilePhotoPath?.trim() || null,
      rememberTokenDigest: token?.trim() ? createHash('sha256').update(token).digest('hex') : null,
      legacyPasswordHash: password,
    },
  }
}
