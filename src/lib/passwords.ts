import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2'
import { hash as bcryptHash, verify as bcryptVerify } from '@node-rs/bcrypt'

// Algorithm.Argon2id; a literal because the package's const enum cannot be imported under type stripping.
export const ARGON2ID = 2

/** One password hash computed or checked: what the login's timing is made of. */
export interface PasswordWork {
  kind: 'hash' | 'verify'
  algorithm: 'argon2id' | 'bcrypt'
  /** bcrypt's cost (log2 of its rounds); argon2id uses the library's defaults everywhere. */
  cost?: number
  /** Checked against a decoy hash, only to spend the same time as a real check. */
  decoy: boolean
}

const observers = new Set<(work: PasswordWork) => void>()
/**
 * Calls `observer` for every password hash computed or checked in this process, decoys included;
 * answers the function that stops it. Tests count the work this way: equal work, equal time.
 */
export function observePasswordWork(observer: (work: PasswordWork) => void): () => void {
  observers.add(observer)
  return () => observers.delete(observer)
}
const record = (work: PasswordWork) => {
  for (const observer of observers) observer(work)
}

/** argon2id with the library's defaults (19 MiB, 2 passes): OWASP's recommended floor. */
export function hashPassword(plain: string): Promise<string> {
  record({ kind: 'hash', algorithm: 'argon2id', decoy: false })
  return argon2Hash(plain, { algorithm: ARGON2ID })
}

const isBcrypt = (hash: string) => /^\$2[aby]\$/.test(hash)

/** The cost written in a bcrypt hash (`$2y$10$...` is 10), or undefined when it names none. */
export function bcryptCostOf(hash: string): number | undefined {
  const cost = /^\$2[aby]\$(\d\d)\$/.exec(hash)?.[1]
  return cost === undefined ? undefined : validBcryptCost(Number(cost))
}
const validBcryptCost = (cost: number) =>
  Number.isInteger(cost) && cost >= 4 && cost <= 31 ? cost : undefined

async function checkArgon2(hash: string, plain: string, decoy: boolean): Promise<boolean> {
  record({ kind: 'verify', algorithm: 'argon2id', decoy })
  return argon2Verify(hash, plain).catch(() => false)
}

async function checkBcrypt(hash: string, plain: string, decoy: boolean): Promise<boolean> {
  record({ kind: 'verify', algorithm: 'bcrypt', cost: bcryptCostOf(hash), decoy })
  // PHP writes $2y$; the algorithm is the same as $2b$.
  return bcryptVerify(plain, hash.replace(/^\$2y\$/, '$2b$')).catch(() => false)
}

/** Checks a password against argon2id or a bcrypt hash imported from the Laravel original. */
export async function verifyPassword(
  hash: string,
  plain: string,
): Promise<{ valid: boolean; needsRehash: boolean }> {
  if (isBcrypt(hash)) {
    const valid = await checkBcrypt(hash, plain, false)
    return { valid, needsRehash: valid }
  }
  return { valid: await checkArgon2(hash, plain, false), needsRehash: false }
}

// Decoy hashes of a password nobody has, made once per process (and per bcrypt cost) on first use.
const DECOY_PLAIN = 'decoy-password-never-matches'
let argon2Decoy: Promise<string> | undefined
const bcryptDecoys = new Map<number, Promise<string>>()
const decoyArgon2 = () => {
  argon2Decoy ??= argon2Hash(DECOY_PLAIN, { algorithm: ARGON2ID })
  return argon2Decoy
}
const decoyBcrypt = (cost: number) => {
  let decoy = bcryptDecoys.get(cost)
  if (!decoy) {
    decoy = bcryptHash(DECOY_PLAIN, { cost })
    bcryptDecoys.set(cost, decoy)
  }
  return decoy
}

/**
 * A sign-in's password check, costing the same whatever the account: one argon2id check and, while
 * any bcrypt hash imported from the Laravel original remains (`importedCost`, the highest cost among
 * them, or null when none does), one bcrypt check at that cost. The account's own hash takes the
 * check of its kind; the other one, and both for an unknown email (`stored` undefined), run against
 * decoys. So an unknown email, an argon2id account and an imported one answer in the same time.
 * A bcrypt hash of a lower cost than the highest still answers faster: Laravel writes one cost
 * (BCRYPT_ROUNDS), so imports normally hold one.
 */
export async function verifyLoginPassword(
  stored: string | undefined,
  plain: string,
  importedCost: number | null,
): Promise<{ valid: boolean; needsRehash: boolean }> {
  const imported = stored !== undefined && isBcrypt(stored)
  const argon2Valid =
    stored !== undefined && !imported
      ? await checkArgon2(stored, plain, false)
      : (await checkArgon2(await decoyArgon2(), plain, true)) && false
  let bcryptValid = false
  if (imported) bcryptValid = await checkBcrypt(stored, plain, false)
  else {
    const cost = importedCost === null ? undefined : validBcryptCost(importedCost)
    if (cost !== undefined) await checkBcrypt(await decoyBcrypt(cost), plain, true)
  }
  return { valid: argon2Valid || bcryptValid, needsRehash: bcryptValid }
}
