import { and, eq, gte, lt, lte, or, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { passwordResetTokens, users } from '../../db/schema/index.ts'

/** The email's token, when it is `tokenHash` and was made at or after `notBefore`. */
const liveToken = (email: string, tokenHash: string, notBefore: Date) =>
  and(
    eq(passwordResetTokens.email, email),
    eq(passwordResetTokens.token, tokenHash),
    gte(passwordResetTokens.createdAt, notBefore),
  )

export function createPasswordResetRepository({ db }: { db: Db }) {
  return {
    /**
     * Stores `tokenHash` as the email's only token, unless its current one was made after
     * `unlessNewerThan`; answers whether it was stored. One statement, so racing requests cannot both win.
     */
    async issue(email: string, tokenHash: string, now: Date, unlessNewerThan: Date): Promise<boolean> {
      const rows = await db
        .insert(passwordResetTokens)
        .values({ email, token: tokenHash, createdAt: now })
        .onConflictDoUpdate({
          target: passwordResetTokens.email,
          set: { token: tokenHash, createdAt: now },
          setWhere: lte(passwordResetTokens.createdAt, unlessNewerThan),
        })
        .returning({ email: passwordResetTokens.email })
      return rows.length > 0
    },

    /** Whether the email's token is `tokenHash` and was made at or after `notBefore` (without using it). */
    async isLive(email: string, tokenHash: string, notBefore: Date): Promise<boolean> {
      const rows = await db
        .select({ email: passwordResetTokens.email })
        .from(passwordResetTokens)
        .where(liveToken(email, tokenHash, notBefore))
        .limit(1)
      return rows.length > 0
    },

    /**
     * Deletes the email's token when it is `tokenHash` and was made at or after `notBefore`; answers
     * whether it did. Deleting is the check, so a token works once even when two resets race.
     */
    async consume(email: string, tokenHash: string, notBefore: Date): Promise<boolean> {
      const rows = await db
        .delete(passwordResetTokens)
        .where(liveToken(email, tokenHash, notBefore))
        .returning({ email: passwordResetTokens.email })
      return rows.length > 0
    },

    /** Deletes the token of an address (any case): its account is being deleted. */
    async deleteFor(email: string): Promise<void> {
      await db.delete(passwordResetTokens).where(sql`lower(${passwordResetTokens.email}) = lower(${email})`)
    },

    /** Deletes tokens made before `notBefore` and those of an address no account has; answers how many. */
    async deleteStale(notBefore: Date): Promise<number> {
      const accountHasIt = sql`exists (select 1 from ${users} where lower(${users.email}) = lower(${passwordResetTokens.email}))`
      const rows = await db
        .delete(passwordResetTokens)
        .where(or(lt(passwordResetTokens.createdAt, notBefore), sql`not ${accountHasIt}`))
        .returning({ email: passwordResetTokens.email })
      return rows.length
    },
  }
}

export type PasswordResetRepository = ReturnType<typeof createPasswordResetRepository>
