import type { UserRow } from '../../../db/schema/index.ts'
import { HttpError } from '../../../lib/errors.ts'
import type { ChatDeps } from '../chat.deps.ts'
import { joinRequestNotFound } from '../chat.errors.ts'
import { type ChatEvent, emitAll, messagePosted } from '../chat.events.ts'
import { accessGroup, requireOwner } from '../groups/group-access.ts'
import { createGroupsRepository } from '../groups/groups.repository.ts'
import { appendMessage } from '../messages/append-message.ts'
import { createJoinRequestsRepository } from './join-requests.repository.ts'
import type { JoinRequest, RespondBody } from './join-requests.schemas.ts'

const alreadyAnswered = () => new HttpError(409, 'This join request has already been answered.')

export function createJoinRequestsService(deps: ChatDeps) {
  const { db, clock, appUrl, events } = deps

  return {
    /**
     * The group's owner approves (the requester joins) or declines a pending request; announced as
     * JoinRequestResponded. Someone who cannot see the group is told the request does not exist.
     */
    async respond(user: UserRow, id: number, input: RespondBody): Promise<JoinRequest> {
      const found = await createJoinRequestsRepository({ db }).find(id)
      if (!found) throw joinRequestNotFound(id)
      const { request, announced } = await db.transaction(async (tx) => {
        const groups = createGroupsRepository({ db: tx })
        const access = await accessGroup(groups, user, found.groupId, {
          lock: true,
          notFound: () => joinRequestNotFound(id),
        })
        requireOwner(access)
        const requests = createJoinRequestsRepository({ db: tx })
        const locked = await requests.find(id, { lock: true })
        if (!locked) throw joinRequestNotFound(id)
        if (locked.status !== 'pending') throw alreadyAnswered()
        const status = input.action === 'approve' ? 'approved' : 'declined'
        const now = clock.now()
        const request = await requests.answer(id, status, user.id, now)
        const announced: ChatEvent[] = [
          {
            name: 'JoinRequestResponded',
            payload: {
              joinRequestId: id,
              groupId: request.groupId,
              userId: request.userId,
              respondedBy: user.id,
              accepted: status === 'approved',
              status,
            },
          },
        ]
        if (status === 'approved' && (await groups.addMember(access.group, request.userId, 'member', now))) {
          const requester = await groups.userName(request.userId)
          const notice = await appendMessage(
            tx,
            {
              groupId: request.groupId,
              kind: 'system',
              author: null,
              body: `${requester ?? 'A new member'} joined the group.`,
              at: now,
            },
            appUrl,
          )
          announced.push(messagePosted(notice))
        }
        return { request, announced }
      })
      emitAll(events, announced)
      return { id: request.id, group_id: request.groupId, user_id: request.userId, status: request.status }
    },
  }
}
