import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ThrottleRule } from '../../../plugins/guards.ts'
import type { MailLimit } from './invites.service.ts'

const HOUR = 3600
const DAY = 86_400

/**
 * Invitations one user may send a day, whatever the groups and addresses (mailed or not), so that an
 * account cannot mail strangers in bulk from our domain. Past it, the request is a 429.
 */
export const inviterThrottle: ThrottleRule = {
  name: 'invites-by-inviter',
  max: 50,
  decaySeconds: DAY,
  key: (request) => String(request.user?.id),
}

/**
 * Per group and address, the first mail and three more (resends or invitations again) an hour, so
 * that re-inviting cannot get round the resend limit. Past it, the request is a 429.
 */
const groupAddressThrottle = (groupId: number, email: string): ThrottleRule => ({
  name: 'invite-mail',
  max: 4,
  decaySeconds: HOUR,
  key: () => `${groupId}:${email}`,
})

/**
 * Invitation mails one address receives a day from every group and inviter together. Past it the
 * invitation is still made but not mailed, and answered alike: a 429 would tell the caller that
 * others had invited the address.
 */
export const RECIPIENT_MAILS = { name: 'invite-mails-to', max: 3, decaySeconds: DAY } as const

/**
 * The limits of invitation mails, for one request. The X-RateLimit headers on `reply` are the
 * caller's own daily allowance; the recipient's count is never shown.
 */
export const inviteMailLimit =
  (app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): MailLimit =>
  async (groupId, email) => {
    const address = email.toLowerCase()
    await app.rateLimiter.enforce(inviterThrottle, request, reply)
    await app.rateLimiter.enforce(groupAddressThrottle(groupId, address), request)
    const { name, max, decaySeconds } = RECIPIENT_MAILS
    const { attempts } = await app.rateLimiter.counters.hit(name, address, decaySeconds)
    return attempts <= max
  }
