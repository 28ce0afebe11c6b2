import { createHash } from 'node:crypto'
import type { Config } from '../../config.ts'
import type { UserRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { forbidden } from '../../lib/errors.ts'
import { renderMail } from '../../lib/mail/message.ts'
import { checkSignedUrl, signUrl } from '../../lib/signed-url.ts'
import type { Mailer } from '../../plugins/mailer.ts'
import type { UsersService } from '../users/users.service.ts'

// Laravel's auth.verification.expire: links live 60 minutes.
const LINK_LIFETIME_MS = 60 * 60_000

// Laravel's VerifyEmail: the link names the user and the sha1 of the address it was sent to.
const emailHash = (email: string) => createHash('sha1').update(email.toLowerCase()).digest('hex')

export function createEmailVerificationService(deps: {
  config: Config
  clock: Clock
  mailer: Mailer
  users: UsersService
}) {
  const { config, clock, mailer, users } = deps
  const verifyPath = `${config.appUrl}/api/email/verify`

  /** The signed link for the user's current address. */
  function verificationUrl(user: UserRow): string {
    const url = new URL(verifyPath)
    url.searchParams.set('id', String(user.id))
    url.searchParams.set('hash', emailHash(user.email))
    return signUrl(url.toString(), config.appKey, new Date(clock.now().getTime() + LINK_LIFETIME_MS))
  }

  return {
    verificationUrl,

    /**
     * Queues the link (the outbox sends it after the answer, see Mailer.queue); answers false, mailing
     * nothing, for an address already verified.
     */
    async sendLink(user: UserRow): Promise<boolean> {
      if (user.emailVerifiedAt) return false
      await mailer.queue(
        renderMail(user.email, {
          subject: 'Verify Email Address',
          lines: ['Please click the button below to verify your email address.'],
          action: { label: 'Verify Email Address', url: verificationUrl(user) },
          outro: [
            'This link expires in 60 minutes.',
            'If you did not create an account, no further action is required.',
          ],
        }),
      )
      return true
    },

    /**
     * Verifies the address a link was made for: 403 for a tampered or expired link, or one made for an
     * address the user no longer has. Verifying twice is harmless.
     */
    async verify(requestUrl: string, query: { id: number; hash: string }): Promise<UserRow> {
      // Only the query comes from the request; the rest is APP_URL's verify path, as signed. So the
      // check follows the configured public URL, not the Host header, and survives a proxy that
      // serves the app under a path prefix of APP_URL.
      const queryStart = requestUrl.indexOf('?')
      const received = `${verifyPath}${queryStart === -1 ? '' : requestUrl.slice(queryStart)}`
      const check = checkSignedUrl(config.appUrl, received, config.appKey, clock.now())
      if (check === 'invalid') throw forbidden('Invalid signature.')
      if (check === 'expired') throw forbidden('This verification link has expired.')
      const user = await users.findById(query.id)
      if (!user || emailHash(user.email) !== query.hash) throw forbidden()
      return users.markEmailVerified(user)
    },
  }
}

export type EmailVerificationService = ReturnType<typeof createEmailVerificationService>
