import type { Db } from '../../../db/client.ts'
import type { UserRow } from '../../../db/schema/index.ts'
import { forbidden, ValidationError } from '../../../lib/errors.ts'
import type { StoredFile } from '../../../lib/storage/storage.ts'
import type { ChatDeps } from '../chat.deps.ts'
import { attachmentNotFound, groupNotFound, messageNotFound } from '../chat.errors.ts'
import { emitAll, messagePosted } from '../chat.events.ts'
import { presentMessage } from '../chat.presenters.ts'
import type { Message } from '../chat.schemas.ts'
import { accessGroup, canRead, isOwner, NOT_A_MEMBER, requireMember } from '../groups/group-access.ts'
import { removeFiles } from '../groups/group-changes.ts'
import { createGroupsRepository } from '../groups/groups.repository.ts'
import { appendMessage } from './append-message.ts'
import type { StoredUpload } from './attachments.ts'
import { createMessagesRepository } from './messages.repository.ts'
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, type OlderResponse } from './messages.schemas.ts'

export interface NewMessageInput {
  groupId: number
  body: string
  /** Files already streamed into storage; removed again if the message is refused. */
  uploads: StoredUpload[]
  /** More files were sent than a message takes. */
  tooManyFiles?: boolean
  /** Ask the AI to analyse it: the analysis is queued with the message and answered later in the group. */
  askAi?: boolean
}

/** An attachment opened for sending. */
export interface AttachmentDownload extends StoredFile {
  name: string
  mimeType: string
}

const ACCEPTED = 'png, jpg, gif, webp, pdf'

/** Laravel's messages for `attachments.*` (`file|mimes:...|max:10240`), keyed as Laravel keys them. */
function checkUploads(input: NewMessageInput): void {
  const errors: Record<string, string[]> = {}
  if (input.tooManyFiles) {
    errors.attachments = [`The attachments field must not have more than ${MAX_ATTACHMENTS} items.`]
  }
  input.uploads.forEach((upload, index) => {
    const key = `attachments.${index}`
    if (upload.truncated || upload.size > MAX_ATTACHMENT_BYTES) {
      errors[key] = [`The ${key} field must not be greater than ${MAX_ATTACHMENT_BYTES / 1024} kilobytes.`]
    } else if (upload.size === 0 || !upload.mimeType) {
      errors[key] = [`The ${key} field must be a file of type: ${ACCEPTED}.`]
    }
  })
  if (!input.body && input.uploads.length === 0 && !input.tooManyFiles) {
    errors.body = ['The body field is required when attachments is not present.']
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors)
}

export function createMessagesService(deps: ChatDeps) {
  const { db, clock, appUrl, events } = deps

  /** The group of a message as the user may reach it; a message in a group they cannot see is not found. */
  const accessOf = (on: Db, user: UserRow, groupId: number, messageId: number, lock = false) =>
    accessGroup(createGroupsRepository({ db: on }), user, groupId, {
      lock,
      notFound: () => messageNotFound(messageId),
    })

  // Over the pool, built once: its one-statement post is prepared once.
  const messagesRepo = createMessagesRepository({ db })

  /**
   * A text message (no files, no AI question) that needs no check after the membership's: one
   * statement, answered and refused as the transaction below answers and refuses.
   */
  async function postText(user: UserRow, input: NewMessageInput): Promise<Message> {
    const outcome = await messagesRepo.postAsMember({
      groupId: input.groupId,
      userId: user.id,
      body: input.body,
      at: clock.now(),
    })
    if (outcome.kind === 'no-group') throw groupNotFound(input.groupId)
    if (outcome.kind === 'not-member') {
      // As accessGroup and requireMember answer: a private group is not there for an outsider.
      if (outcome.group.isPrivate && !user.isAdmin) throw groupNotFound(input.groupId)
      throw forbidden(NOT_A_MEMBER)
    }
    const message = presentMessage({ ...outcome.message, author: user }, [], appUrl)
    emitAll(events, [messagePosted(message)])
    return message
  }

  return {
    /** A member writes to the group: text, files or both. Announced as SocketMessage. */
    async post(user: UserRow, input: NewMessageInput): Promise<Message> {
      if (input.uploads.length === 0 && !input.tooManyFiles && input.body !== '' && !input.askAi) {
        return postText(user, input)
      }
      let message: Message
      try {
        // Before the transaction: the check reads the credits on a connection of its own.
        if (input.askAi && deps.askAi) await deps.affordAi?.(user.id)
        message = await db.transaction(async (tx) => {
          const access = await accessGroup(createGroupsRepository({ db: tx }), user, input.groupId, {
            lock: true,
          })
          // Who may write first, then what they wrote, as Laravel's FormRequest authorizes before it validates.
          requireMember(access)
          checkUploads(input)
          const files = input.uploads.map(({ path, name, size, mimeType }) => ({
            path,
            name,
            size,
            mimeType: mimeType as string,
          }))
          const posted = await appendMessage(
            tx,
            { groupId: input.groupId, kind: 'user', author: user, body: input.body, files, at: clock.now() },
            appUrl,
          )
          if (input.askAi && deps.askAi)
            await deps.askAi(tx, { groupId: input.groupId, messageId: posted.id })
          return posted
        })
      } catch (error) {
        await removeFiles(
          deps,
          input.uploads.map((upload) => upload.path),
        )
        throw error
      }
      emitAll(events, [messagePosted(message)])
      return message
    },

    /** Up to `limit` messages before `messageId` in its group, oldest first (keyset on the id). */
    async older(user: UserRow, messageId: number, limit: number): Promise<OlderResponse> {
      const messages = createMessagesRepository({ db })
      const anchor = await messages.find(messageId)
      if (!anchor) throw messageNotFound(messageId)
      const access = await accessOf(db, user, anchor.groupId, messageId)
      if (!canRead(access)) throw forbidden('You are not a member of this group.')
      const page = await messages.page(anchor.groupId, anchor.id, limit)
      const shown = page.slice(0, limit).reverse()
      const attachments = await messages.attachmentsOf(shown.map((m) => m.id))
      return {
        data: shown.map((m) =>
          presentMessage(
            m,
            attachments.filter((a) => a.messageId === m.id),
            appUrl,
          ),
        ),
        has_more: page.length > limit,
      }
    },

    /** Its author, the group's owner or a site admin deletes a message and its files. */
    async delete(user: UserRow, messageId: number): Promise<void> {
      const found = await createMessagesRepository({ db }).find(messageId)
      if (!found) throw messageNotFound(messageId)
      const { files, message } = await db.transaction(async (tx) => {
        const access = await accessOf(tx, user, found.groupId, messageId, true)
        const repo = createMessagesRepository({ db: tx })
        // Read again under the group's lock: someone may have deleted it meanwhile.
        const message = await repo.find(messageId)
        if (!message) throw messageNotFound(messageId)
        const mayDelete = message.userId === user.id || isOwner(access) || user.isAdmin
        if (!mayDelete) throw forbidden('You may delete only your own messages.')
        const files = await repo.delete(message)
        await createGroupsRepository({ db: tx }).recordDeleted(message)
        return { files, message }
      })
      await removeFiles(deps, files)
      emitAll(events, [
        {
          name: 'MessageDeleted',
          payload: { messageId, senderId: message.userId, groupId: message.groupId, deletedBy: user.id },
        },
      ])
    },

    /** An attachment for a member (or site admin) to download; anyone else is told it does not exist. */
    async openAttachment(
      user: UserRow,
      messageId: number,
      attachmentId: number,
    ): Promise<AttachmentDownload> {
      const messages = createMessagesRepository({ db })
      const message = await messages.find(messageId)
      if (!message) throw attachmentNotFound(attachmentId)
      const access = await accessGroup(createGroupsRepository({ db }), user, message.groupId, {
        notFound: () => attachmentNotFound(attachmentId),
      })
      if (!canRead(access)) throw attachmentNotFound(attachmentId)
      const row = await messages.attachment(messageId, attachmentId)
      const file = row && (await deps.storage.open(row.path))
      if (!row || !file) throw attachmentNotFound(attachmentId)
      return { ...file, name: row.name, mimeType: row.mimeType }
    },
  }
}

export type MessagesService = ReturnType<typeof createMessagesService>
