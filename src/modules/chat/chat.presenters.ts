import type { ChatAttachmentRow, ChatGroupRow, MessageKind } from '../../db/schema/index.ts'
import { laravelDate, publicStorageUrl } from '../../lib/laravel.ts'
import type { Attachment, ChatUser, Group, Message } from './chat.schemas.ts'

/** The user columns a chat answer shows. */
export interface ChatUserRow {
  id: number
  name: string
  profilePhotoPath: string | null
}

/** A message row with its author's columns (null: assistant, system, or a deleted account). */
export interface MessageWithAuthor {
  id: number
  groupId: number
  kind: MessageKind
  body: string
  createdAt: Date
  author: ChatUserRow | null
}

export const presentChatUser = (user: ChatUserRow, appUrl: string): ChatUser => ({
  id: user.id,
  name: user.name,
  profile_photo_url: user.profilePhotoPath ? publicStorageUrl(appUrl, user.profilePhotoPath) : null,
})

export const presentGroup = (group: ChatGroupRow): Group => ({
  id: group.id,
  name: group.name,
  description: group.description,
  is_private: group.isPrivate,
  owner_id: group.ownerId,
  member_count: group.memberCount,
  created_at: laravelDate(group.createdAt),
  updated_at: laravelDate(group.updatedAt),
})

export const attachmentUrl = (appUrl: string, messageId: number, attachmentId: number) =>
  `${appUrl}/api/message/${messageId}/attachments/${attachmentId}`

export const presentAttachment = (row: ChatAttachmentRow, appUrl: string): Attachment => ({
  id: row.id,
  name: row.name,
  mime_type: row.mimeType,
  size: row.size,
  url: attachmentUrl(appUrl, row.messageId, row.id),
})

export const presentMessage = (
  message: MessageWithAuthor,
  attachments: readonly ChatAttachmentRow[],
  appUrl: string,
): Message => ({
  id: message.id,
  group_id: message.groupId,
  kind: message.kind,
  user: message.author ? presentChatUser(message.author, appUrl) : null,
  body: message.body,
  attachments: attachments.map((row) => presentAttachment(row, appUrl)),
  created_at: laravelDate(message.createdAt),
})
