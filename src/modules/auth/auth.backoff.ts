import type { UserRow } from '../../db/schema/index.ts'
import { type Clock, unixSeconds } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import { type MailMessage, renderMail } from '../../lib/mail/message.ts'
import type { RateLimitCounters } from '../../plugins/rate-limit.ts'
import type { UsersService } from '../users/users.service.ts'
import type { DevicePass } from './auth.device-cookie.ts'

/** Every this many failed logins for one email (within FAILURE_WINDOW_SECONDS), its logins pause. */
export const BACKOFF_EVERY = 10
/** The first pause, the second, then every later one: minutes at most, so the owner is never shut out for long. */
export const BACKOFF_SECONDS = [60, 5 * 60, 15 * 60] as const
/** Failures add up for a day from the first; a successful login starts the count again. */
const FAILURE_WINDOW_SECONDS = 24 * 60 * 60

/** A device cookie tried this many times without a sign-in (within DEVICE_WINDOW_SECONDS) is no pass. */
export const DEVICE_ATTEMPTS = 10
/** A device's attempts add up for a day from the first; a sign-in with it starts the count again. */
const DEVICE_WINDOW_SECONDS = 24 * 60 * 60

const FAILURES = 'login-account-failures'
const BACKOFF = 'login-account-backoff'
const DEVICE = 'login-device-attempts'

const minutes = (seconds: number) => `${seconds / 60} minute${seconds === 60 ? '' : 's'}`

/** Tells the owner that someone is guessing their password, and that their logins pause meanwhile. */
function backoffMail(user: UserRow, failures: number, seconds: number): MailMessage {
  return renderMail(user.email, {
    subject: 'Failed sign-in attempts',
    lines: [
      `Someone tried to sign in to your account with a wrong password ${failures} times. To slow them down, signing in to your account is paused for ${minutes(seconds)}; then you can sign in as usual. Browsers you have signed in with before are not paused.`,
      'If this was not you, your password was not given away by these attempts, but make sure it is long and not used anywhere else, and turn on two-factor authentication.',
    ],
  })
}

/** Fortify's lockout answer (auth.throttle): the 422 shape on `email`, with 429 and Retry-After. */
function tooManyLoginAttempts(resetAt: number, now: number): ValidationError {
  const seconds = Math.max(1, resetAt - now)
  const message = `Too many login attempts. Please try again in ${seconds} seconds.`
  return new ValidationError({ email: [message] }, 429, { 'retry-after': String(seconds) })
}

/**
 * The per-account back-off of the login: every BACKOFF_EVERY failed logins for one email, from any
 * addresses, pause its logins for longer (1 minute, 5, then 15 each time), answering 429 without
 * checking the password; each longer pause mails the owner once. Counted by email whether or not an
 * account has it, so the answer tells no one which emails have accounts. It comes on top of the
 * per-address limits, which rotating addresses get round.
 *
 * A browser where the user signed in before (its device cookie names them) is neither paused nor
 * counted: its attempts count for that device alone, and past DEVICE_ATTEMPTS without a sign-in it
 * is no pass, so a stolen cookie gives a guesser DEVICE_ATTEMPTS a day (OWASP's device cookies).
 */
export function createLoginBackoff(deps: {
  counters: RateLimitCounters
  clock: Clock
  users: UsersService
  queueMail(mail: MailMessage): Promise<void>
}) {
  const { counters, clock, users, queueMail } = deps

  async function recordFailure(email: string): Promise<void> {
    const { attempts } = await counters.hit(FAILURES, email, FAILURE_WINDOW_SECONDS)
    if (attempts % BACKOFF_EVERY !== 0) return
    const level = attempts / BACKOFF_EVERY
    const seconds = BACKOFF_SECONDS[Math.min(level, BACKOFF_SECONDS.length) - 1] ?? 15 * 60
    await counters.hit(BACKOFF, email, seconds)
    // One mail per step up; at the longest pause the owner has been told already.
    if (level > BACKOFF_SECONDS.length) return
    const user = await users.findByEmail(email)
    if (user) await queueMail(backoffMail(user, attempts, seconds))
  }

  /**
   * `device`, when it lets this attempt past the back-off of `email`: it names the account of that
   * email, and has not been tried too often. The attempt is counted before the password is checked,
   * so attempts racing each other cannot get more than their share.
   */
  async function admitted(device: DevicePass | undefined, email: string): Promise<DevicePass | undefined> {
    if (!device) return undefined
    const user = await users.findByEmail(email)
    if (user?.id !== device.userId) return undefined
    const { attempts } = await counters.hit(DEVICE, device.nonce, DEVICE_WINDOW_SECONDS)
    return attempts <= DEVICE_ATTEMPTS ? device : undefined
  }

  return {
    /**
     * Runs `login` for `email` unless its logins are paused (429, even for the right password) and
     * `device` is no pass for them; a failure (422) counts, a success clears the count: the
     * device's when it let the attempt in, else the email's.
     */
    async attempt(
      email: string,
      device: DevicePass | undefined,
      login: () => Promise<UserRow>,
    ): Promise<UserRow> {
      const key = email.trim().toLowerCase()
      const pass = await admitted(device, key)
      if (!pass) {
        const paused = await counters.peek(BACKOFF, key)
        if (paused) throw tooManyLoginAttempts(paused.resetAt, unixSeconds(clock))
      }
      try {
        const user = await login()
        // A sign-in on a known browser leaves the account's count to the strangers who made it.
        if (pass) await counters.clear(DEVICE, pass.nonce)
        else await counters.clear(FAILURES, key)
        return user
      } catch (error) {
        if (!pass && error instanceof ValidationError && error.status === 422) await recordFailure(key)
        throw error
      }
    },

    /** Ends the pause and the count of `email` (a password reset: the owner proved the mailbox). */
    async clear(email: string): Promise<void> {
      const key = email.trim().toLowerCase()
      await Promise.all([counters.clear(FAILURES, key), counters.clear(BACKOFF, key)])
    },
  }
}

export type LoginBackoff = ReturnType<typeof createLoginBackoff>
