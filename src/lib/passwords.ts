import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2'
import { verify as bcryptVerify } from '@node-rs/bcrypt'

// Algorithm.Argon2id; a literal because the package's const enum cannot be imported under type stripping.
const ARGON2ID = 2

/** argon2id with the library's defaults (19 MiB, 2 passes): OWASP's recommended floor. */
export function hashPassword(plain: string): Promise<string> {
  return argon2Hash(plain, { algorithm: ARGON2ID })
}

const isBcrypt = (hash: string) => /^\$2[aby]\$/.test(hash)

/** Checks a password against argon2id or a bcrypt hash imported from the Laravel original. */
export async function verifyPassword(
  hash: string,
  plain: string,
): Promise<{ valid: boolean; needsRehash: boolean }> {
  try {
    if (isBcrypt(hash)) {
      // PHP writes $2y$; the algorithm is the same as $2b$.
      const valid = await bcryptVerify(plain, hash.replace(/^\$2y\$/, '$2b$'))
      return { valid, needsRehash: valid }
    }
    return { valid: await argon2Verify(hash, plain), needsRehash: false }
  } catch {
    return { valid: false, needsRehash: false }
  }
}

// Verified when the email is unknown, so a wrong email costs as long as a wrong password.
let decoyHash: Promise<string> | undefined
export async function verifyDecoyPassword(plain: string): Promise<void> {
  decoyHash ??= hashPassword('decoy-password-never-matches')
  await argon2Verify(await decoyHash, plain).catch(() => false)
}
