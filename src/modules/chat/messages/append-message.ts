import type { Db } from '../../../db/client.ts'
import type { MessageKind } from '../../../db/schema/index.ts'
import { type ChatUserRow, presentMessage } from '../chat.presenters.ts'
import type { Message } from '../chat.schemas.ts'
import { createGroupsRepository } from '../groups/groups.repository.ts'
import { createMessagesRepository, type NewAttachment } from './messages.repository.ts'

export interface NewChatMessage {
  groupId: number
  kind: MessageKind
  /** Who wrote it; null for assistant and system messages. */
  author: ChatUserRow | null
  body: string
  /** Files already in storage, to attach. */
  files?: Omit<NewAttachment, 'messageId' | 'createdAt'>[]
  at: Date
}

/**
 * Writes a message (and its attachments) through `tx`, whose group row the caller has locked, so
 * message ids grow in the order messages commit within a group; answers it as the API presents it.
 */
export async function appendMessage(tx: Db, input: NewChatMessage, appUrl: string): Promise<Message> {
  const repo = createMessagesRepository({ db: tx })
  const row = await repo.insertPosted({
    groupId: input.groupId,
    userId: input.author?.id ?? null,
    kind: input.kind,
    body: input.body,
    createdAt: input.at,
  })
  const attachments = await repo.insertAttachments(
    (input.files ?? []).map((file) => ({ ...file, messageId: row.id, createdAt: input.at })),
  )
  return presentMessage({ ...row, author: input.author }, attachments, appUrl)
}

/**
 * Takes the group row's lock in `tx`, as a post does, for a writer outside a request (the AI
 * analysis job) that must lock the group before its own rows, in the order every chat change
 * does; false when the group is gone.
 */
export async function lockGroupForPost(tx: Db, groupId: number): Promise<boolean> {
  return (await createGroupsRepository({ db: tx }).find(groupId, { lock: true })) !== undefined
}
