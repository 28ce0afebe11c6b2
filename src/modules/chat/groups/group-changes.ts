import type { Db } from '../../../db/client.ts'
import type { ChatGroupRow, UserRow } from '../../../db/schema/index.ts'
import type { ChatDeps } from '../chat.deps.ts'
import { type ChatEvent, messagePosted } from '../chat.events.ts'
import { appendMessage } from '../messages/append-message.ts'
import { createMessagesRepository } from '../messages/messages.repository.ts'
import { createGroupsRepository } from './groups.repository.ts'

/** Removes stored files after the rows naming them are gone; a failure is logged, never answered. */
export async function removeFiles(deps: Pick<ChatDeps, 'storage' | 'log'>, paths: readonly string[]) {
  for (const path of paths) {
    await deps.storage.delete(path).catch((error: unknown) => {
      deps.log.warn({ err: error, path }, 'could not delete a chat attachment')
    })
  }
}

/** In `tx`: deletes a (locked) group; answers its files to remove and the event, for after commit. */
export async function deleteLockedGroup(tx: Db, group: ChatGroupRow, deletedBy: number) {
  const repo = createGroupsRepository({ db: tx })
  const files = await createMessagesRepository({ db: tx }).filesOfGroup(group.id)
  const memberIds = await repo.memberIds(group.id)
  await repo.delete(group.id)
  const event: ChatEvent = { name: 'GroupDeleted', payload: { groupId: group.id, deletedBy, memberIds } }
  return { files, event }
}

/** In `tx`: the user leaves a locked group they belong to, with a system message saying so. */
export async function leaveLockedGroup(
  deps: Pick<ChatDeps, 'clock' | 'appUrl'>,
  tx: Db,
  group: ChatGroupRow,
  user: UserRow,
): Promise<ChatEvent[]> {
  await createGroupsRepository({ db: tx }).removeMember(group.id, user.id)
  const notice = await appendMessage(
    tx,
    {
      groupId: group.id,
      kind: 'system',
      author: null,
      body: `${user.name} left the group.`,
      at: deps.clock.now(),
    },
    deps.appUrl,
  )
  return [
    {
      name: 'UserLeftGroup',
      payload: { groupId: group.id, userId: user.id, memberCount: group.memberCount - 1 },
    },
    messagePosted(notice),
  ]
}
