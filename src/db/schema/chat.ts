import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  varchar,
} from 'drizzle-orm/pg-core'
import { users } from './users.ts'

const at = (name: string) => timestamp(name, { withTimezone: true, precision: 6 })
const id = () => bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity()

export const MEMBER_ROLES = ['owner', 'member'] as const
export type MemberRole = (typeof MEMBER_ROLES)[number]
export const MESSAGE_KINDS = ['user', 'assistant', 'system'] as const
export type MessageKind = (typeof MESSAGE_KINDS)[number]
export const JOIN_REQUEST_STATUSES = ['pending', 'approved', 'declined'] as const
export type JoinRequestStatus = (typeof JOIN_REQUEST_STATUSES)[number]
/** Stored invite states; `expired` is never stored: it is a pending invite past `expires_at`. */
export const STORED_INVITE_STATUSES = ['pending', 'accepted', 'declined', 'revoked'] as const
export type StoredInviteStatus = (typeof STORED_INVITE_STATUSES)[number]

/**
 * A chat room. `member_count`, `last_message_id` and `last_activity_at` are kept in step by the
 * transactions that change members and messages (which lock this row first), so the sidebar reads
 * one row per group and never scans history.
 */
export const chatGroups = pgTable(
  'chat_groups',
  {
    id: id(),
    name: varchar('name', { length: 100 }).notNull(),
    description: text('description'),
    isPrivate: boolean('is_private').notNull().default(false),
    // Deleting a user hands their groups over first (chat service); the database refuses to orphan one.
    ownerId: bigint('owner_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'restrict' }),
    memberCount: integer('member_count').notNull().default(0),
    // Conversation messages (not system ones) ever posted: a member's unread count is this minus
    // their read_count, so a post changes one group row whatever the number of members.
    conversationCount: integer('conversation_count').notNull().default(0),
    lastMessageId: bigint('last_message_id', { mode: 'number' }),
    lastActivityAt: at('last_activity_at').notNull(),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    check('chat_groups_member_count_non_negative', sql`${t.memberCount} >= 0`),
    check('chat_groups_conversation_count_non_negative', sql`${t.conversationCount} >= 0`),
  ],
)

/**
 * Who belongs to a group. `last_read_message_id` is the read marker; `read_count` counts the
 * group's conversation messages that are not unread for this member (read, their own, or deleted
 * while unread), so their unread count is the group's `conversation_count` minus it: an author's
 * post raises their own, viewing the group recounts it.
 */
export const chatGroupMembers = pgTable(
  'chat_group_members',
  {
    groupId: bigint('group_id', { mode: 'number' })
      .notNull()
      .references(() => chatGroups.id, { onDelete: 'cascade' }),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: varchar('role', { length: 16 }).$type<MemberRole>().notNull(),
    lastReadMessageId: bigint('last_read_message_id', { mode: 'number' }).notNull().default(0),
    readCount: integer('read_count').notNull().default(0),
    // The previous release's counter, which it still reads and raises during a rolling update; no
    // longer kept up to date: dropped by the next release's migration.
    unreadCount: integer('unread_count').notNull().default(0),
    joinedAt: at('joined_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.groupId, t.userId] }),
    index('chat_group_members_user_id_index').on(t.userId),
    // One owner per group.
    uniqueIndex('chat_group_members_one_owner').on(t.groupId).where(sql`${t.role} = 'owner'`),
    check('chat_group_members_read_count_non_negative', sql`${t.readCount} >= 0`),
    check('chat_group_members_unread_non_negative', sql`${t.unreadCount} >= 0`),
  ],
)

/** A message; `user_id` is null for assistant and system messages and once its author is deleted. */
export const chatMessages = pgTable(
  'chat_messages',
  {
    id: id(),
    groupId: bigint('group_id', { mode: 'number' })
      .notNull()
      .references(() => chatGroups.id, { onDelete: 'cascade' }),
    userId: bigint('user_id', { mode: 'number' }).references(() => users.id, { onDelete: 'set null' }),
    kind: varchar('kind', { length: 16 }).$type<MessageKind>().notNull(),
    body: text('body').notNull().default(''),
    createdAt: at('created_at').notNull(),
  },
  (t) => [index('chat_messages_group_id_id_index').on(t.groupId, t.id)],
)

/** A file attached to a message, kept in the file storage under `path`. */
export const chatMessageAttachments = pgTable(
  'chat_message_attachments',
  {
    id: id(),
    messageId: bigint('message_id', { mode: 'number' })
      .notNull()
      .references(() => chatMessages.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 255 }).notNull(),
    mimeType: varchar('mime_type', { length: 64 }).notNull(),
    size: integer('size').notNull(),
    path: text('path').notNull(),
    createdAt: at('created_at').notNull(),
  },
  (t) => [index('chat_message_attachments_message_id_index').on(t.messageId)],
)

/** A request to join a private group, answered by its owner; one pending request per user and group. */
export const chatJoinRequests = pgTable(
  'chat_join_requests',
  {
    id: id(),
    groupId: bigint('group_id', { mode: 'number' })
      .notNull()
      .references(() => chatGroups.id, { onDelete: 'cascade' }),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    status: varchar('status', { length: 16 }).$type<JoinRequestStatus>().notNull(),
    respondedBy: bigint('responded_by', { mode: 'number' }).references(() => users.id, {
      onDelete: 'set null',
    }),
    respondedAt: at('responded_at'),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('chat_join_requests_one_pending').on(t.groupId, t.userId).where(sql`${t.status} = 'pending'`),
    index('chat_join_requests_user_id_index').on(t.userId),
  ],
)

/**
 * An invitation by email (stored lowercased); only the SHA-256 of its token is kept. One pending
 * invite per address and group.
 */
export const chatInvites = pgTable(
  'chat_invites',
  {
    id: id(),
    groupId: bigint('group_id', { mode: 'number' })
      .notNull()
      .references(() => chatGroups.id, { onDelete: 'cascade' }),
    email: varchar('email', { length: 255 }).notNull(),
    tokenHash: varchar('token_hash', { length: 64 }).notNull(),
    invitedBy: bigint('invited_by', { mode: 'number' }).references(() => users.id, { onDelete: 'set null' }),
    status: varchar('status', { length: 16 }).$type<StoredInviteStatus>().notNull(),
    expiresAt: at('expires_at').notNull(),
    respondedAt: at('responded_at'),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('chat_invites_token_hash_unique').on(t.tokenHash),
    uniqueIndex('chat_invites_one_pending').on(t.groupId, t.email).where(sql`${t.status} = 'pending'`),
    index('chat_invites_email_index').on(t.email),
  ],
)

export type ChatGroupRow = typeof chatGroups.$inferSelect
export type ChatMemberRow = typeof chatGroupMembers.$inferSelect
export type ChatMessageRow = typeof chatMessages.$inferSelect
export type ChatAttachmentRow = typeof chatMessageAttachments.$inferSelect
export type ChatJoinRequestRow = typeof chatJoinRequests.$inferSelect
export type ChatInviteRow = typeof chatInvites.$inferSelect
