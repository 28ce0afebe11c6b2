import { createHash, randomBytes } from 'node:crypto'
import type { Db } from '../../../db/client.ts'
import type { UserRow } from '../../../db/schema/index.ts'
import { forbidden, ValidationError } from '../../../lib/errors.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import type { MailMessage } from '../../../lib/mail/message.ts'
import type { ChatDeps } from '../chat.deps.ts'
import { fieldError, inviteNotFound } from '../chat.errors.ts'
import { emitAll, messagePosted } from '../chat.events.ts'
import { presentGroup } from '../chat.presenters.ts'
import type { Group } from '../chat.schemas.ts'
import { accessGroup, requireOwner } from '../groups/group-access.ts'
import { createGroupsRepository } from '../groups/groups.repository.ts'
import { createJoinRequestsRepository } from '../join-requests/join-requests.repository.ts'
import { appendMessage } from '../messages/append-message.ts'
import { inviteUserMail } from './invites.mails.ts'
import { createInvitesRepository, type InviteListing } from './invites.repository.ts'
import {
  type AcceptInviteBody,
  INVITE_DAYS,
  type Invite,
  type InviteStatus,
  type ValidateInviteResponse,
} from './invites.schemas.ts'

export interface InvitesDeps extends ChatDeps {
  /** Where the app shows an invitation: `{base}/invites/{token}` (the first FRONTEND_URL). */
  inviteBaseUrl: string
  /** Queues a mail in the transaction of the change that causes it. */
  queueMail(mail: MailMessage, tx: Db): void | Promise<void>
}

/**
 * Counts one invitation mail to `email` for the group: throws (429) past the caller's own limits;
 * answers false when the address has had its mails for the day (invited, not mailed). Invites and
 * resends share it, so re-inviting cannot be used to get round the resend limit.
 */
export type MailLimit = (groupId: number, email: string) => Promise<boolean>

const DAY_MS = 86_400_000
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex')
// 30 random bytes are 40 URL-safe characters.
const newToken = () => randomBytes(30).toString('base64url')

export function createInvitesService(deps: InvitesDeps) {
  const { db, clock, appUrl, events } = deps

  const statusOf = (listing: { invite: InviteListing['invite'] }): InviteStatus =>
    listing.invite.status === 'pending' && listing.invite.expiresAt.getTime() <= clock.nowMs()
      ? 'expired'
      : listing.invite.status

  const present = (listing: InviteListing): Invite => ({
    id: listing.invite.id,
    group: { id: listing.group.id, name: listing.group.name },
    email: listing.invite.email,
    invited_by: listing.inviter,
    status: statusOf(listing),
    expires_at: laravelDate(listing.invite.expiresAt),
    created_at: laravelDate(listing.invite.createdAt),
  })

  const sameEmail = (user: UserRow, email: string) => user.email.toLowerCase() === email.toLowerCase()

  /**
   * Moves the invite's expiry and, when it is to be mailed, issues a new token (its old link stops
   * working) and mails it, in `tx`. Unmailed, an invite keeps the token it has (the link mailed
   * last keeps working): `write` is told to keep it, and a new invite gets one never sent.
   */
  async function issue(
    tx: Db,
    inviter: UserRow,
    groupName: string,
    mailed: boolean,
    write: (tokenHash: string, expiresAt: Date, keepToken: boolean) => Promise<{ id: number; email: string }>,
  ): Promise<number> {
    const token = newToken()
    const expiresAt = new Date(clock.nowMs() + INVITE_DAYS * DAY_MS)
    const invite = await write(hashToken(token), expiresAt, !mailed)
    if (!mailed) return invite.id
    const url = `${deps.inviteBaseUrl}/invites/${token}`
    await deps.queueMail(
      inviteUserMail({ to: invite.email, groupName, inviterName: inviter.name, url, expiresAt }),
      tx,
    )
    return invite.id
  }

  /** In `tx`: the invite and its group, both rows locked (the group first, as every chat change locks). */
  async function lockInvite(tx: Db, id: number) {
    const repo = createInvitesRepository({ db: tx })
    const found = await repo.find(id)
    if (!found) throw inviteNotFound(id)
    const group = await createGroupsRepository({ db: tx }).find(found.groupId, { lock: true })
    const invite = await repo.find(id, { lock: true })
    if (!group || !invite) throw inviteNotFound(id)
    return { group, invite }
  }

  async function presentById(id: number): Promise<Invite> {
    const listing = await createInvitesRepository({ db }).listing(id)
    if (!listing) throw inviteNotFound(id)
    return present(listing)
  }

  /** In `tx`: the user joins the (locked) group by invitation; answers the system message. */
  async function joinByInvite(tx: Db, groupId: number, user: UserRow) {
    const groups = createGroupsRepository({ db: tx })
    const group = await groups.find(groupId, { lock: true })
    if (!group) throw inviteNotFound(groupId)
    const now = clock.now()
    await createJoinRequestsRepository({ db: tx }).approvePendingOf(groupId, user.id, now)
    if (!(await groups.addMember(group, user.id, 'member', now))) return { group, notice: null }
    const notice = await appendMessage(
      tx,
      { groupId, kind: 'system', author: null, body: `${user.name} joined the group.`, at: now },
      appUrl,
    )
    return { group: { ...group, memberCount: group.memberCount + 1 }, notice }
  }

  return {
    /**
     * The group's owner invites addresses: each gets one pending invite (refreshed when it had one)
     * and InviteUserMail with its link. An address that already belongs to a member is a 422 on its
     * field (`fieldOf(index)`), and then nobody is invited. `beforeMailing` counts each mail
     * against the limits (invites and resends alike); an address it holds back is invited unmailed.
     */
    async invite(
      user: UserRow,
      groupId: number,
      emails: string[],
      fieldOf: (index: number) => string,
      beforeMailing: MailLimit,
    ): Promise<Invite[]> {
      const ids = await db.transaction(async (tx) => {
        const groups = createGroupsRepository({ db: tx })
        const access = await accessGroup(groups, user, groupId, { lock: true })
        requireOwner(access)
        const memberEmails = new Set(await groups.memberEmailsAmong(groupId, emails))
        const errors: Record<string, string[]> = {}
        emails.forEach((email, index) => {
          if (memberEmails.has(email.toLowerCase())) {
            errors[fieldOf(index)] = ['This person is already a member of the group.']
          }
        })
        if (Object.keys(errors).length > 0) throw new ValidationError(errors)
        const repo = createInvitesRepository({ db: tx })
        const ids: number[] = []
        for (const email of new Set(emails.map((e) => e.toLowerCase()))) {
          const mailed = await beforeMailing(groupId, email)
          ids.push(
            await issue(tx, user, access.group.name, mailed, (tokenHash, expiresAt, keepToken) =>
              repo.upsertPending({
                groupId,
                email,
                tokenHash,
                keepToken,
                invitedBy: user.id,
                expiresAt,
                now: clock.now(),
              }),
            ),
          )
        }
        return ids
      })
      const repo = createInvitesRepository({ db })
      const listings = await Promise.all(ids.map((id) => repo.listing(id)))
      return listings.flatMap((listing) => (listing ? [present(listing)] : []))
    },

    /**
     * The invites waiting for the user, found by their email address: only once that address is
     * verified, so an account made with someone else's address learns nothing of their invitations.
     */
    async list(user: UserRow): Promise<Invite[]> {
      if (!user.emailVerifiedAt) return []
      return (await createInvitesRepository({ db }).pendingFor(user.email, clock.now())).map(present)
    },

    /** What an invitation link leads to, without using it; always an answer, never an error. */
    async validate(user: UserRow, token: string): Promise<ValidateInviteResponse['data']> {
      const listing = await createInvitesRepository({ db }).listingByTokenHash(hashToken(token))
      if (!listing) return { valid: false, reason: 'unknown' }
      const status = statusOf(listing)
      if (status !== 'pending') return { valid: false, reason: status }
      return {
        valid: true,
        group: { id: listing.group.id, name: listing.group.name, member_count: listing.group.memberCount },
        email_matches: sameEmail(user, listing.invite.email),
        expires_at: laravelDate(listing.invite.expiresAt),
      }
    },

    /**
     * Accepts an invitation by its token (the address must be the caller's) or by id (the caller's
     * verified address must be the invitation's): the caller joins the group, private or not.
     */
    async accept(user: UserRow, input: AcceptInviteBody): Promise<Group> {
      const field = input.token !== undefined ? 'token' : 'invite_id'
      const repo = createInvitesRepository({ db })
      let found: InviteListing['invite'] | undefined
      if (input.token !== undefined) {
        found = await repo.findByTokenHash(hashToken(input.token))
        if (!found) throw fieldError('token', 'This invitation is invalid.')
        if (!sameEmail(user, found.email))
          throw forbidden('This invitation was sent to another email address.')
      } else if (input.invite_id !== undefined) {
        found = await repo.find(input.invite_id)
        if (!found || !sameEmail(user, found.email)) throw inviteNotFound(input.invite_id)
        if (!user.emailVerifiedAt) throw forbidden('Verify your email address to accept this invitation.')
      } else {
        throw fieldError('token', 'The token field is required when invite id is not present.')
      }
      const invite = found
      const { group, notice } = await db.transaction(async (tx) => {
        // The group first, then the invite: the order every invite change locks them in.
        await createGroupsRepository({ db: tx }).find(invite.groupId, { lock: true })
        const locked = await createInvitesRepository({ db: tx }).find(invite.id, { lock: true })
        if (!locked || locked.tokenHash !== invite.tokenHash)
          throw fieldError(field, 'This invitation is invalid.')
        const status = statusOf({ invite: locked })
        if (status !== 'pending')
          throw fieldError(
            field,
            `This invitation has ${status === 'expired' ? 'expired' : `already been ${status}`}.`,
          )
        const joined = await joinByInvite(tx, locked.groupId, user)
        await createInvitesRepository({ db: tx }).setStatus(locked.id, 'accepted', clock.now())
        return joined
      })
      if (notice) emitAll(events, [messagePosted(notice)])
      return presentGroup(group)
    },

    /** The group's owner revokes an invitation, or its invitee declines it; to anyone else it does not exist. */
    async remove(user: UserRow, id: number): Promise<Invite> {
      await db.transaction(async (tx) => {
        const { group, invite } = await lockInvite(tx, id)
        const owner = group.ownerId === user.id
        const invitee = sameEmail(user, invite.email) && user.emailVerifiedAt !== null
        if (!owner && !invitee) throw inviteNotFound(id)
        if (invite.status !== 'pending') throw fieldError('invite', 'This invitation is no longer pending.')
        await createInvitesRepository({ db: tx }).setStatus(id, owner ? 'revoked' : 'declined', clock.now())
      })
      return presentById(id)
    },

    /**
     * The group's owner mails a pending invitation again, with a new link and expiry (an expired one
     * is invited again instead); `beforeMailing` counts the mail against the limits, and an address
     * it holds back keeps its link, unmailed, answered alike.
     */
    async resend(user: UserRow, id: number, beforeMailing: MailLimit): Promise<Invite> {
      await db.transaction(async (tx) => {
        const { group, invite } = await lockInvite(tx, id)
        if (group.ownerId !== user.id) throw inviteNotFound(id)
        const status = statusOf({ invite })
        if (status !== 'pending') {
          throw fieldError(
            'invite',
            `Only a pending invitation can be sent again; this one is ${status} (invite the address again instead).`,
          )
        }
        const mailed = await beforeMailing(group.id, invite.email)
        await issue(tx, user, group.name, mailed, async (tokenHash, expiresAt, keepToken) => {
          const kept = keepToken ? invite.tokenHash : tokenHash
          await createInvitesRepository({ db: tx }).refresh(id, kept, expiresAt, clock.now())
          return invite
        })
      })
      return presentById(id)
    },
  }
}

export type InvitesService = ReturnType<typeof createInvitesService>
