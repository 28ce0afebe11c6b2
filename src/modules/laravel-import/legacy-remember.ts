import { createHash, timingSafeEqual } from 'node:crypto'
import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import { parseRememberCookie, passwordHashMatches } from '../../lib/laravel-compat/session-guard.ts'
import { createImportedUsersRepository } from './imported-users.repository.ts'

// The original's users.id as its remember cookie names it: a positive whole number a JavaScript
// number holds exactly (old_id is read as one).
const OLD_ID = /^[1-9][0-9]{0,14}$/

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex')

function sameHex(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8')
  const right = Buffer.from(b, 'utf8')
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * The user the original's remember cookie (`id|token|hash`, opened) still signs in, as Laravel's
 * SessionGuard::userFromRecaller and AuthenticateSession check it: the imported user of that old
 * id, the token's SHA-256 equal to the imported remember_token's, and the hash that of the bcrypt
 * hash the original knew (raw, or its HMAC under one of the original's keys); undefined once either
 * was forgotten (a password change, a logout), and for a blocked user.
 */
export async function rememberedUser(
  db: Db,
  recaller: string,
  keys: readonly string[],
): Promise<UserRow | undefined> {
  const parts = parseRememberCookie(recaller)
  if (!parts || !OLD_ID.test(parts.id)) return undefined
  const found = await createImportedUsersRepository({ db }).findWithUser(Number(parts.id))
  if (!found) return undefined
  const { rememberTokenDigest: digest, legacyPasswordHash: hash } = found.imported
  if (!digest || !hash || found.user.blockedAt) return undefined
  if (!sameHex(sha256Hex(parts.token), digest)) return undefined
  return keys.some((key) => passwordHashMatches(parts.hash, hash, key)) ? found.user : undefined
}

/**
 * In a password change's transaction (users.service): the original's remember cookie named the old
 * password, so it no longer signs anyone in. Not called for the rehash at the first sign-in, which
 * keeps the password.
 */
export const forgetLegacyCredentials = (tx: Db, userId: number) =>
  createImportedUsersRepository({ db: tx }).forgetCredentials(userId)
