import { createHash, randomBytes } from 'node:crypto'
import type { Config } from '../../config.ts'
import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import type { EventBus } from '../../lib/events.ts'
import { renderMail } from '../../lib/mail/message.ts'
import { hashPassword } from '../../lib/passwords.ts'
import type { ServiceEvents } from '../../plugins/events.ts'
import type { Mailer } from '../../plugins/mailer.ts'
import type { Outbox } from '../../plugins/outbox.ts'
import type { LoginBackoff } from '../auth/auth.backoff.ts'
import type { UsersService } from '../users/users.service.ts'
import { createPasswordResetRepository } from './password-reset.repository.ts'
import type { ResetPasswordBody } from './password-reset.schemas.ts'

// Laravel's auth.passwords.users: tokens live 60 minutes, and a new one is made at most every 60 seconds.
const TOKEN_LIFETIME_MS = 60 * 60_000
const REISSUE_AFTER_MS = 60_000

/** The outbox kind of a forgot-password request, whose work (look-up, token, mail) runs after the answer. */
export const RESET_LINK_JOB = 'password-reset-link'

// The token is mailed, never stored: a leaked table holds only SHA-256 hashes of 256-bit randoms.
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex')

const invalidToken = () => ValidationError.withMessages({ email: ['This password reset token is invalid.'] })

export function createPasswordResetService(deps: {
  db: Db
  config: Config
  clock: Clock
  mailer: Mailer
  outbox: Pick<Outbox, 'enqueue'>
  users: UsersService
  events: EventBus<ServiceEvents>
  loginBackoff: Pick<LoginBackoff, 'clear'>
}) {
  const { config, clock, mailer, users } = deps
  const repo = createPasswordResetRepository({ db: deps.db })
  // The SPA's page that reads the token; APP_URL when no frontend origin is configured.
  const resetPage = `${config.frontendOrigins[0] ?? config.appUrl}/reset-password`

  function resetUrl(token: string, email: string): string {
    const url = new URL(resetPage)
    url.searchParams.set('token', token)
    url.searchParams.set('email', email)
    return url.toString()
  }

  return {
    /**
     * Fortify's forgot-password, answered the same for every address: the request only queues the
     * work (one outbox row, whatever the address), so a known email, an unknown one and a repeat
     * within a minute cost the same before the answer. `issueLink` does the work after it.
     */
    async requestLink(email: string): Promise<void> {
      await deps.outbox.enqueue(RESET_LINK_JOB, {
        email: email.trim(),
        requestedAt: clock.now().toISOString(),
      })
    },

    /**
     * The queued work of one forgot-password request: for a known address, a token and its mail,
     * stored in one transaction (a token whose mail was never queued would block a retry for a
     * minute); nothing for an unknown address, or when the address had a link made within the minute
     * before the request (Laravel's throttle). Dated by the request, so a late or repeated run
     * changes nothing. The outbox sends the mail.
     */
    async issueLink(payload: Record<string, unknown>): Promise<void> {
      const requestedAt = new Date(String(payload.requestedAt))
      if (typeof payload.email !== 'string' || Number.isNaN(requestedAt.getTime())) return
      const user = await users.findByEmail(payload.email)
      if (!user) return
      const token = randomBytes(32).toString('hex')
      const mail = renderMail(user.email, {
        subject: 'Reset Password Notification',
        lines: [
          'You are receiving this email because we received a password reset request for your account.',
        ],
        action: { label: 'Reset Password', url: resetUrl(token, user.email) },
        outro: [
          'This password reset link will expire in 60 minutes.',
          'If you did not request a password reset, no further action is required.',
        ],
      })
      await deps.db.transaction(async (tx) => {
        const issued = await createPasswordResetRepository({ db: tx }).issue(
          user.email,
          hashToken(token),
          requestedAt,
          new Date(requestedAt.getTime() - REISSUE_AFTER_MS),
        )
        if (issued) await mailer.queue(mail, tx)
      })
    },

    /**
     * Sets a new password with a live token, which is then used up; a wrong, expired or used token and
     * an unknown email are the same 422 on `email`. The token, the new password and the owner's notice
     * are written in one transaction (the hash is computed before it, once the token is known to be
     * live). Answers the user, whose sessions the caller ends. The login back-off of the address
     * ends with it.
     */
    async reset(input: ResetPasswordBody): Promise<UserRow> {
      if (input.password_confirmation !== undefined && input.password_confirmation !== input.password) {
        throw ValidationError.withMessages({ password: ['The password field confirmation does not match.'] })
      }
      const email = input.email.trim().toLowerCase()
      const tokenHash = hashToken(input.token)
      const notBefore = new Date(clock.nowMs() - TOKEN_LIFETIME_MS)
      if (!(await repo.isLive(email, tokenHash, notBefore))) throw invalidToken()
      const passwordHash = await hashPassword(input.password)
      const user = await deps.db.transaction(async (tx) => {
        // Consuming is the check: of two resets racing with one token, one gets here.
        if (!(await createPasswordResetRepository({ db: tx }).consume(email, tokenHash, notBefore))) return
        const txUsers = users.within(tx)
        const found = await txUsers.findByEmail(email)
        const updated = found && (await txUsers.setPasswordHash(found, passwordHash))
        // Tells the owner at once, in case it was not them.
        if (updated) await mailer.queue(passwordResetNotice(updated), tx)
        return updated
      })
      if (!user) throw invalidToken()
      await deps.events.publish('PasswordChanged', { userId: user.id, kept: null })
      // Whoever kept the login paused guessed the old password; the owner may sign in anywhere now.
      await deps.loginBackoff.clear(user.email)
      return user
    },

    /**
     * In an account deletion's transaction: the token of its address goes with it (keyed by
     * email, it has no foreign key to cascade). Nothing to do after commit.
     */
    async releaseAccount(tx: Db, user: UserRow): Promise<() => Promise<void>> {
      await createPasswordResetRepository({ db: tx }).deleteFor(user.email)
      return async () => {}
    },

    /**
     * Deletes the tokens nobody can use any more: expired ones, and those of addresses no account has
     * (deleted, or changed since). Answers how many went.
     */
    prune: () => repo.deleteStale(new Date(clock.nowMs() - TOKEN_LIFETIME_MS)),
  }
}

const passwordResetNotice = (user: UserRow) =>
  renderMail(user.email, {
    subject: 'Your password has been changed',
    lines: [
      'The password of your account was just reset, and every device signed in to it was signed out.',
      'If this was you, no further action is required.',
    ],
    outro: ['If it was not you, reset your password again at once and contact support.'],
  })

export type PasswordResetService = ReturnType<typeof createPasswordResetService>
