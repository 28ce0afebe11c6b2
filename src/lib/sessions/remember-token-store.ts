import type { Db } from '../../db/client.ts'
import type { RememberTokenRow, UserRow } from '../../db/schema/index.ts'
import { type Clock, unixSeconds } from '../clock.ts'
import { createRememberTokensRepository } from './remember-tokens.repository.ts'
import { hashSessionToken, randomSessionToken } from './session-store.ts'

/** A remembered device as the request holds it: `token` is the cookie value, `row.id` its SHA-256. */
export interface IssuedRememberToken {
  token: string
  row: RememberTokenRow
}

/**
 * "Remember me" (Laravel's recaller, one per device rather than one per user): a long-lived token
 * that starts a new session for its user once the old one has ended, without the password.
 */
export function createRememberTokenStore({
  db,
  clock,
  lifetimeMinutes,
}: {
  db: Db
  clock: Clock
  /** How long a device stays remembered from sign-in (REMEMBER_LIFETIME); using it does not extend it. */
  lifetimeMinutes: number
}) {
  const repo = createRememberTokensRepository({ db })
  return {
    /** Remembers the device a user signs in on. */
    async issue(input: {
      userId: number
      ipAddress: string | null
      userAgent: string | null
    }): Promise<IssuedRememberToken> {
      const token = randomSessionToken()
      const now = unixSeconds(clock)
      const row: RememberTokenRow = {
        id: hashSessionToken(token),
        userId: input.userId,
        ipAddress: input.ipAddress?.slice(0, 45) ?? null,
        userAgent: input.userAgent?.slice(0, 500) ?? null,
        createdAt: now,
        lastUsedAt: now,
        expiresAt: now + lifetimeMinutes * 60,
      }
      await repo.insert(row)
      return { token, row }
    },

    /**
     * The device and user a cookie value names, when the device is still remembered and its user may
     * sign in (not blocked); undefined otherwise. Marks the device used.
     */
    async redeem(token: string): Promise<{ row: RememberTokenRow; user: UserRow } | undefined> {
      if (token.length === 0 || token.length > 100) return undefined
      const found = await repo.use(hashSessionToken(token), unixSeconds(clock))
      if (!found || found.user.blockedAt) return undefined
      return { row: found.token, user: found.user }
    },

    /** Forgets the devices named (by row id); unknown ids are ignored. */
    forget: (ids: string[]) => repo.delete(ids),

    /** Forgets every device of a user (password change or reset, block), but `exceptId`'s. */
    forgetAllOf: (userId: number, exceptId?: string | null) => repo.deleteForUser(userId, exceptId),

    /** The user's remembered devices, the most recently used first. */
    listForUser: (userId: number) => repo.findForUser(userId, unixSeconds(clock)),

    /** Deletes the devices whose time is up (the session plugin's background sweep). */
    sweepExpired: () => repo.deleteExpired(unixSeconds(clock)),
  }
}

export type RememberTokenStore = ReturnType<typeof createRememberTokenStore>
