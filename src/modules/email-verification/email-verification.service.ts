import { createHash } from 'node:crypto'
import type { Config } from '../../config.ts'
import type { Db } from '../../db/client.ts'
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

  /** The signed link for `address`: the user's current one, or the new one waiting to be verified. */
  function verificationUrl(user: UserRow, address = user.email): string {
    const url = new URL(verifyPath)
    url.searchParams.set('id', String(user.id))
    url.searchParams.set('hash', emailHash(address))
    return signUrl(url.toString(), config.appKey, new Date(clock.nowMs() + LINK_LIFETIME_MS))
  }

  const linkMail = (user: UserRow, address: string) =>
    renderMail(address, {
      subject: 'Verify Email Address',
      lines: ['Please click the button below to verify your email address.'],
      action: { label: 'Verify Email Address', url: verificationUrl(user, address) },
      outro: [
        'This link expires in 60 minutes.',
        'If you did not create an account, no further action is required.',
      ],
    })

  // To the address being replaced: it can do nothing with this mail (no link), only learn of the change.
  const changeNoticeMail = (user: UserRow) =>
    renderMail(user.email, {
      subject: 'Your email address is being changed',
      greeting: `Hello ${user.name}!`,
      lines: [
        'A change of the email address of your Trading App account was just asked for, and a link was mailed to the new address.',
        'Until that link is followed, this address stays the one you sign in with and the one password reset links go to.',
      ],
      outro: ['If this was not you, change your password at once and contact support.'],
    })

  return {
    verificationUrl,

    /**
     * Queues the link (the outbox sends it after the answer, see Mailer.queue) to the new address
     * waiting to be verified, or else to the current one; answers false, mailing nothing, when there
     * is nothing to verify.
     */
    async sendLink(user: UserRow, tx?: Db): Promise<boolean> {
      if (user.pendingEmail) {
        await mailer.queue(linkMail(user, user.pendingEmail), tx)
        return true
      }
      if (user.emailVerifiedAt) return false
      await mailer.queue(linkMail(user, user.email), tx)
      return true
    },

    /**
     * In the transaction that stored `user`'s new pending address: the link to the new address, and
     * a notice (without a link) to the current one.
     */
    async announceEmailChange(user: UserRow, tx: Db): Promise<void> {
      if (!user.pendingEmail) return
      await mailer.queue(linkMail(user, user.pendingEmail), tx)
      await mailer.queue(changeNoticeMail(user), tx)
    },

    /**
     * Verifies the address a link was made for: the current one, or the pending new one, which then
     * becomes the account's. 403 for a tampered or expired link, or one made for an address the user
     * no longer has (or asks for no more). Verifying twice is harmless.
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
      if (!user) throw forbidden()
      if (emailHash(user.email) === query.hash) return users.markEmailVerified(user)
      // A link for the new address of an email change: the account switches to it, verified.
      if (user.pendingEmail && emailHash(user.pendingEmail) === query.hash) {
        const switched = await users.switchToPendingEmail(user)
        if (switched) return switched
      }
      throw forbidden()
    },
  }
}

export type EmailVerificationService = ReturnType<typeof createEmailVerificationService>
