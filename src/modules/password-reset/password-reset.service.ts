import { createHash, randomBytes } from 'node:crypto'
import type { Config } from '../../config.ts'
import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { ValidationError } from '../../lib/errors.ts'
import { renderMail } from '../../lib/mail/message.ts'
import type { Mailer } from '../../plugins/mailer.ts'
import type { UsersService } from '../users/users.service.ts'
import { createPasswordResetRepository } from './password-reset.repository.ts'
import type { ResetPasswordBody } from './password-reset.schemas.ts'

// Laravel's auth.passwords.users: tokens live 60 minutes, and a new one is made at most every 60 seconds.
const TOKEN_LIFETIME_MS = 60 * 60_000
const REISSUE_AFTER_MS = 60_000

// The token is mailed, never stored: a leaked table holds only SHA-256 hashes of 256-bit randoms.
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex')

const invalidToken = () => ValidationError.withMessages({ email: ['This password reset token is invalid.'] })

export function createPasswordResetService(deps: {
  db: Db
  config: Config
  clock: Clock
  mailer: Mailer
  users: UsersService
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
     * Fortify's forgot-password without its tells: an unknown email, or a link asked for again within a
     * minute, mails nothing but answers the same. The token and its mail are stored in one transaction
     * (a token whose mail was never queued would block a retry for a minute); the outbox sends it.
     */
    async sendResetLink(email: string): Promise<void> {
      const user = await users.findByEmail(email)
      if (!user) return
      const token = randomBytes(32).toString('hex')
      const now = clock.now()
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
          now,
          new Date(now.getTime() - REISSUE_AFTER_MS),
        )
        if (issued) await mailer.queue(mail, tx)
      })
    },

    /**
     * Sets a new password with a live token, which is then used up; a wrong, expired or used token and
     * an unknown email are the same 422 on `email`. Answers the user, whose sessions the caller ends.
     */
    async reset(input: ResetPasswordBody): Promise<UserRow> {
      if (input.password_confirmation !== undefined && input.password_confirmation !== input.password) {
        throw ValidationError.withMessages({ password: ['The password field confirmation does not match.'] })
      }
      const email = input.email.trim().toLowerCase()
      const notBefore = new Date(clock.now().getTime() - TOKEN_LIFETIME_MS)
      if (!(await repo.consume(email, hashToken(input.token), notBefore))) throw invalidToken()
      const user = await users.findByEmail(email)
      if (!user) throw invalidToken()
      await users.setPassword(user, input.password)
      // Tells the owner at once, in case it was not them.
      await mailer.queue(
        renderMail(user.email, {
          subject: 'Your password has been changed',
          lines: [
            'The password of your account was just reset, and every device signed in to it was signed out.',
            'If this was you, no further action is required.',
          ],
          outro: ['If it was not you, reset your password again at once and contact support.'],
        }),
      )
      return user
    },
  }
}

export type PasswordResetService = ReturnType<typeof createPasswordResetService>
