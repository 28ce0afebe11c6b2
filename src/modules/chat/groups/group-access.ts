import type { ChatGroupRow, ChatMemberRow, UserRow } from '../../../db/schema/index.ts'
import { forbidden, type HttpError } from '../../../lib/errors.ts'
import { groupNotFound } from '../chat.errors.ts'
import type { GroupsRepository } from './groups.repository.ts'

/** A group as one user may reach it: their membership (null when they have none). */
export interface GroupAccess {
  group: ChatGroupRow
  membership: ChatMemberRow | null
  user: UserRow
}

/**
 * The group `id` as `user` sees it. A private group they do not belong to does not exist for them
 * (404, the same answer as an unknown id); site admins see every group, for moderation. A route that
 * names something inside the group (a message, a request) answers its own 404 (`notFound`) instead.
 */
export async function accessGroup(
  repo: GroupsRepository,
  user: UserRow,
  id: number,
  options: { lock?: boolean; notFound?: () => HttpError } = {},
): Promise<GroupAccess> {
  const notFound = options.notFound ?? (() => groupNotFound(id))
  const group = await repo.find(id, { lock: options.lock })
  if (!group) throw notFound()
  const membership = (await repo.membership(id, user.id)) ?? null
  if (group.isPrivate && !membership && !user.isAdmin) throw notFound()
  return { group, membership, user }
}

export const isOwner = (access: GroupAccess) => access.membership?.role === 'owner'

/** Members read the conversation; so do site admins, who moderate it. */
export const canRead = (access: GroupAccess) => access.membership !== null || access.user.isAdmin

export const NOT_A_MEMBER = 'You are not a member of this group.'

/** Writing needs membership: a visible group one has not joined answers 403. */
export function requireMember(access: GroupAccess): ChatMemberRow {
  if (!access.membership) throw forbidden(NOT_A_MEMBER)
  return access.membership
}

export function requireOwner(access: GroupAccess): void {
  if (!isOwner(access)) throw forbidden('Only the owner of the group can do this.')
}

export function requireReader(access: GroupAccess): void {
  if (!canRead(access)) throw forbidden(NOT_A_MEMBER)
}
