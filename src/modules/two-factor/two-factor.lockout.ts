import type { UserRow } from '../../db/schema/index.ts'
import { type Clock, unixSeconds } from '../../lib/clock.ts'
import { HttpError } from '../../lib/errors.ts'
import { type MailMessage, renderMail } from '../../lib/mail/message.ts'
import type { RateLimitCounters } from '../../plugins/rate-limit.ts'
import type { UsersService } from '../users/users.service.ts'
import { PENDING_LOGIN_SECONDS, type PendingLogin } from './two-factor.service.ts'

/** Every this many wrong codes for one account (within FAILURE_WINDOW_SECONDS), its challenge locks. */
export const LOCKOUT_EVERY = 5
/** The first lockout, the second, the third, then every later one. */
export const LOCKOUT_SECONDS = [60, 5 * 60, 15 * 60, 60 * 60] as const
/** Wrong codes add up for a day from the first; a right code starts the count again. */
const FAILURE_WINDOW_SECONDS = 24 * 60 * 60

const FAILURES = 'two-factor-failures'
const LOCKOUT = 'two-factor-lockout'

const duration = (seconds: number) =>
  seconds >= 3600
    ? `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`
    : `${seconds / 60} minute${seconds === 60 ? '' : 's'}`

/** Tells the owner that someone with their password is failing the second factor. */
function lockoutMail(user: UserRow, failures: number, seconds: number): MailMessage {
  return renderMail(user.email, {
    subject: 'Two-factor sign-in locked',
    lines: [
      `Someone signed in to your account with your password, then entered a wrong two-factor code ${failures} times. Signing in to your account is locked for ${duration(seconds)}.`,
      'If this was not you, someone else knows your password: change it now, and sign out your other browser sessions.',
    ],
  })
}

/**
 * The escalating lockout of the two-factor challenge, per account: every LOCKOUT_EVERY wrong codes
 * lock it for longer (1 minute, 5, 15, then an hour each time) and mail the owner. It comes on top
 * of the per-minute throttle, which limits how fast codes are tried; this limits how many.
 */
export function createTwoFactorLockout(deps: {
  counters: RateLimitCounters
  /** The 429 (with Retry-After) for a lockout ending at `resetAt` (unix seconds). */
  refuse(max: number, resetAt: number): HttpError
  clock: Clock
  users: UsersService
  queueMail(mail: MailMessage): Promise<void>
}) {
  const { counters, refuse, clock, users, queueMail } = deps

  async function recordFailure(userId: number): Promise<void> {
    const key = String(userId)
    const { attempts } = await counters.hit(FAILURES, key, FAILURE_WINDOW_SECONDS)
    if (attempts % LOCKOUT_EVERY !== 0) return
    const level = Math.min(attempts / LOCKOUT_EVERY, LOCKOUT_SECONDS.length)
    const seconds = LOCKOUT_SECONDS[level - 1] ?? 3600
    await counters.hit(LOCKOUT, key, seconds)
    const user = await users.findById(userId)
    if (user) await queueMail(lockoutMail(user, attempts, seconds))
  }

  return {
    /**
     * Runs the challenge of `pending` unless its account is locked (429, even for a right code); a
     * wrong code of a live pending login counts, a right one clears the count.
     */
    async attempt(pending: PendingLogin | undefined, challenge: () => Promise<UserRow>): Promise<UserRow> {
      if (!pending) return challenge()
      const lock = await counters.peek(LOCKOUT, String(pending.userId))
      if (lock) throw refuse(LOCKOUT_EVERY, lock.resetAt)
      try {
        const user = await challenge()
        await counters.clear(FAILURES, String(user.id))
        return user
      } catch (error) {
        const live = unixSeconds(clock) - pending.startedAt <= PENDING_LOGIN_SECONDS
        if (live && error instanceof HttpError && error.status === 401) await recordFailure(pending.userId)
        throw error
      }
    },
  }
}
