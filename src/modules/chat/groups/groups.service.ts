import type { UserRow } from '../../../db/schema/index.ts'
import { forbidden, HttpError } from '../../../lib/errors.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import type { ChatDeps } from '../chat.deps.ts'
import { fieldError, groupNotFound } from '../chat.errors.ts'
import { emitAll, messagePosted } from '../chat.events.ts'
import { presentChatUser, presentGroup, presentMessage } from '../chat.presenters.ts'
import type { Group } from '../chat.schemas.ts'
import { createJoinRequestsRepository } from '../join-requests/join-requests.repository.ts'
import { appendMessage } from '../messages/append-message.ts'
import { createMessagesRepository } from '../messages/messages.repository.ts'
import { accessGroup, canRead, isOwner, requireOwner } from './group-access.ts'
import { deleteLockedGroup, leaveLockedGroup, removeFiles } from './group-changes.ts'
import { createGroupsRepository, unreadCountOf } from './groups.repository.ts'
import {
  type CreateGroupBody,
  type GroupStatusResponse,
  type GroupView,
  type JoinResponse,
  type SidebarResponse,
  type UpdateGroupBody,
  VIEW_MESSAGES,
} from './groups.schemas.ts'

const ownerMustStay = () =>
  fieldError('group', 'Hand the group over to another member (owner_id) before leaving it.')

export function createGroupsService(deps: ChatDeps) {
  const { db, clock, appUrl, events } = deps

  return {
    /** Creates a group owned (and so joined) by the user. */
    async create(user: UserRow, input: CreateGroupBody): Promise<Group> {
      const group = await db.transaction(async (tx) => {
        const repo = createGroupsRepository({ db: tx })
        const now = clock.now()
        const created = await repo.insert({
          name: input.name,
          description: input.description || null,
          isPrivate: input.is_private ?? false,
          ownerId: user.id,
          lastActivityAt: now,
          createdAt: now,
          updatedAt: now,
        })
        await repo.addMember(created, user.id, 'owner', now)
        return { ...created, memberCount: 1 }
      })
      return presentGroup(group)
    },

    /**
     * The group, its members and, for members and site admins, the newest messages. A member's
     * view marks the group read; its owner also sees the pending join requests.
     */
    async show(user: UserRow, id: number): Promise<GroupView> {
      const repo = createGroupsRepository({ db })
      const access = await accessGroup(repo, user, id)
      const members = await repo.listMembers(id)
      const view: GroupView = {
        ...presentGroup(access.group),
        membership: access.membership
          ? { role: access.membership.role, joined_at: laravelDate(access.membership.joinedAt) }
          : null,
        members: members.map((member) => ({
          ...presentChatUser(member, appUrl),
          role: member.role,
          joined_at: laravelDate(member.joinedAt),
        })),
      }
      if (canRead(access)) {
        const messages = createMessagesRepository({ db })
        const page = await messages.page(id, null, VIEW_MESSAGES)
        const shown = page.slice(0, VIEW_MESSAGES).reverse()
        const attachments = await messages.attachmentsOf(shown.map((m) => m.id))
        view.messages = shown.map((m) =>
          presentMessage(
            m,
            attachments.filter((a) => a.messageId === m.id),
            appUrl,
          ),
        )
        view.has_more_messages = page.length > VIEW_MESSAGES
        if (access.membership) {
          const upTo = Math.max(shown.at(-1)?.id ?? 0, access.group.lastMessageId ?? 0)
          // Under the group's lock, so a post committing meanwhile is either counted or seen.
          await db.transaction(async (tx) => {
            const locked = createGroupsRepository({ db: tx })
            await locked.find(id, { lock: 'share' })
            await locked.markRead(id, user.id, upTo)
          })
        }
      }
      if (isOwner(access)) {
        const pending = await createJoinRequestsRepository({ db }).pendingOf(id)
        view.join_requests = pending.map((request) => ({
          id: request.id,
          user: presentChatUser(request.user, appUrl),
          created_at: laravelDate(request.createdAt),
        }))
      }
      return view
    },

    /** The owner renames, describes, opens or closes the group, or hands it to another member. */
    async update(user: UserRow, id: number, input: UpdateGroupBody): Promise<Group> {
      const group = await db.transaction(async (tx) => {
        const repo = createGroupsRepository({ db: tx })
        const access = await accessGroup(repo, user, id, { lock: true })
        requireOwner(access)
        let ownerId = access.group.ownerId
        if (input.owner_id !== undefined && input.owner_id !== ownerId) {
          if (!(await repo.membership(id, input.owner_id))) {
            throw fieldError('owner_id', 'The new owner must be a member of the group.')
          }
          // The old owner steps down first: the database allows one owner per group.
          await repo.setRole(id, ownerId, 'member')
          await repo.setRole(id, input.owner_id, 'owner')
          ownerId = input.owner_id
        }
        return repo.update(id, {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.description !== undefined ? { description: input.description || null } : {}),
          ...(input.is_private !== undefined ? { isPrivate: input.is_private } : {}),
          ownerId,
          updatedAt: clock.now(),
        })
      })
      if (!group) throw groupNotFound(id)
      return presentGroup(group)
    },

    /** The owner (or a site admin, moderating) deletes the group, its messages and their files. */
    async delete(user: UserRow, id: number): Promise<void> {
      const { files, event } = await db.transaction(async (tx) => {
        const access = await accessGroup(createGroupsRepository({ db: tx }), user, id, { lock: true })
        if (!isOwner(access) && !user.isAdmin) throw forbidden('Only the owner of the group can delete it.')
        return deleteLockedGroup(tx, access.group, user.id)
      })
      await removeFiles(deps, files)
      emitAll(events, [event])
    },

    /**
     * Joins a public group at once; for a private one, files (or keeps) one pending join request
     * for its owner to answer. A private group is named here without being shown: the answer says
     * only that a request is pending.
     */
    async join(user: UserRow, id: number): Promise<JoinResponse['data']> {
      const { result, posted } = await db.transaction(async (tx) => {
        const repo = createGroupsRepository({ db: tx })
        const group = await repo.find(id, { lock: true })
        if (!group) throw groupNotFound(id)
        if (await repo.membership(id, user.id)) return { result: { status: 'member' as const }, posted: null }
        if (group.isPrivate) {
          const request = await createJoinRequestsRepository({ db: tx }).pendingOrNew(
            id,
            user.id,
            clock.now(),
          )
          return { result: { status: 'pending' as const, join_request_id: request.id }, posted: null }
        }
        const now = clock.now()
        await repo.addMember(group, user.id, 'member', now)
        const notice = await appendMessage(
          tx,
          { groupId: id, kind: 'system', author: null, body: `${user.name} joined the group.`, at: now },
          appUrl,
        )
        return { result: { status: 'member' as const }, posted: notice }
      })
      if (posted) emitAll(events, [messagePosted(posted)])
      return result
    },

    /**
     * The member leaves. The owner must hand the group over first while others remain; an owner
     * alone in it leaves by deleting it.
     */
    async leave(user: UserRow, id: number): Promise<'left' | 'deleted'> {
      const outcome = await db.transaction(async (tx) => {
        const access = await accessGroup(createGroupsRepository({ db: tx }), user, id, { lock: true })
        if (!access.membership) throw new HttpError(404, 'You are not a member of this group.')
        if (isOwner(access)) {
          if (access.group.memberCount > 1) throw ownerMustStay()
          return { kind: 'deleted' as const, ...(await deleteLockedGroup(tx, access.group, user.id)) }
        }
        return { kind: 'left' as const, events: await leaveLockedGroup(deps, tx, access.group, user) }
      })
      if (outcome.kind === 'deleted') {
        await removeFiles(deps, outcome.files)
        emitAll(events, [outcome.event])
      } else {
        emitAll(events, outcome.events)
      }
      return outcome.kind
    },

    /** Whether the user belongs to the group (who may join its channels). */
    async isMember(groupId: number, userId: number): Promise<boolean> {
      return (await createGroupsRepository({ db }).membership(groupId, userId)) !== undefined
    },

    /**
     * The caller's standing in a group: membership, their join request, unread and online counts.
     * Someone who asked to join a private group may follow their request here (nothing else of the
     * group is in this answer). Only members get the online count: who comes and goes is the
     * members' business, not a requester's (declined or not) nor a visitor's.
     */
    async status(user: UserRow, id: number): Promise<GroupStatusResponse['data']> {
      const repo = createGroupsRepository({ db })
      const request = await createJoinRequestsRepository({ db }).latest(id, user.id)
      const access = await accessGroup(repo, user, id).catch((error: unknown) => {
        if (request) return null
        throw error
      })
      return {
        is_member: access?.membership != null,
        role: access?.membership?.role ?? null,
        join_request: request ? { id: request.id, status: request.status } : null,
        unread_count: access?.membership ? unreadCountOf(access.group, access.membership) : 0,
        online_count: access?.membership ? (await deps.presence.online(await repo.memberIds(id))).size : null,
      }
    },

    /**
     * The user's conversations, most recent activity first, each with its newest message and
     * unread count: a constant number of queries however many groups (counters, no history scan).
     */
    async sidebar(user: UserRow): Promise<SidebarResponse['data']> {
      const rows = await createGroupsRepository({ db }).conversations(user.id)
      const attachments = await createMessagesRepository({ db }).attachmentsOf(
        rows.flatMap((row) => (row.lastMessage ? [row.lastMessage.id] : [])),
      )
      return rows.map(({ group, unreadCount, lastMessage, author }) => ({
        group: {
          id: group.id,
          name: group.name,
          is_private: group.isPrivate,
          member_count: group.memberCount,
        },
        last_message: lastMessage
          ? presentMessage(
              { ...lastMessage, author },
              attachments.filter((a) => a.messageId === lastMessage.id),
              appUrl,
            )
          : null,
        unread_count: unreadCount,
        last_activity_at: laravelDate(group.lastActivityAt),
      }))
    },
  }
}

export type GroupsService = ReturnType<typeof createGroupsService>
