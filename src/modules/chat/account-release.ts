import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import type { ChatDeps } from './chat.deps.ts'
import { type ChatEvent, emitAll } from './chat.events.ts'
import { deleteLockedGroup, leaveLockedGroup, removeFiles } from './groups/group-changes.ts'
import { createGroupsRepository } from './groups/groups.repository.ts'

/**
 * What deleting an account does to chat, in the deletion's transaction: the person leaves every
 * group they belong to; a group they own passes to its longest-standing member, or is deleted when
 * nobody else is in it. Answers what to do once the deletion commits (remove files, announce).
 */
export function createAccountRelease(deps: ChatDeps) {
  return async (tx: Db, user: UserRow): Promise<() => Promise<void>> => {
    const repo = createGroupsRepository({ db: tx })
    const files: string[] = []
    const announced: ChatEvent[] = []
    // Group rows locked in id order, as any other change to several groups would lock them.
    for (const groupId of await repo.groupIdsOf(user.id)) {
      const group = await repo.find(groupId, { lock: true })
      if (!group) continue
      if (group.ownerId === user.id) {
        const heir = await repo.longestStandingOther(group.id, user.id)
        if (heir === undefined) {
          const deleted = await deleteLockedGroup(tx, group, user.id)
          files.push(...deleted.files)
          announced.push(deleted.event)
          continue
        }
        await repo.setRole(group.id, user.id, 'member')
        await repo.setRole(group.id, heir, 'owner')
        await repo.update(group.id, { ownerId: heir, updatedAt: deps.clock.now() })
      }
      announced.push(...(await leaveLockedGroup(deps, tx, group, user)))
    }
    return async () => {
      await removeFiles(deps, files)
      emitAll(deps.events, announced)
    }
  }
}
