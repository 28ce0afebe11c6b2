import { and, eq, gte, lte } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { passwordResetTokens } from '../../db/schema/index.ts'

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

    /**
     * Deletes the email's token when it is `tokenHash` and was made at or after `notBefore`; answers
     * whether it did. Deleting is the check, so a token works once even when two resets race.
     */
    async consume(email: string, tokenHash: string, notBefore: Date): Promise<boolean> {
      const rows = await db
        .delete(passwordResetTokens)
        .where(
          and(
            eq(passwordResetTokens.email, email),
            eq(passwordResetTokens.token, tokenHash),
            gte(passwordResetTokens.createdAt, notBefore),
          ),
        )
        .returning({ email: passwordResetTokens.email })
      return rows.length > 0
    },
  }
}

export type PasswordResetRepository = ReturnType<typeof createPasswordResetRepository>
