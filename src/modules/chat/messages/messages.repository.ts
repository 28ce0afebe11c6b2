import { and, asc, desc, eq, getTableColumns, lt, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import {
  type ChatAttachmentRow,
  type ChatMessageRow,
  chatMessageAttachments,
  chatMessages,
  users,
} from '../../../db/schema/index.ts'
import type { MessageWithAuthor } from '../chat.presenters.ts'
import { groupPostParts } from '../groups/groups.repository.ts'

export type NewMessage = typeof chatMessages.$inferInsert
export type NewAttachment = typeof chatMessageAttachments.$inferInsert

/** A member's text message to post: the author's id, the group's, what they wrote and when. */
export interface MemberPost {
  groupId: number
  userId: number
  body: string
  at: Date
}

/** What the one-statement post did. */
export type MemberPostOutcome =
  | { kind: 'posted'; message: ChatMessageRow }
  /** The author is not a member (the group is as the lock saw it); nothing was written. */
  | { kind: 'not-member'; group: { isPrivate: boolean } }
  /** There is no such group (any more); nothing was written. */
  | { kind: 'no-group' }

const p = (name: string) => sql.placeholder(name)
const column = (c: { name: string }) => sql.identifier(c.name)
const messageColumns = getTableColumns(chatMessages)
type MessageFields = { [K in keyof typeof messageColumns]: unknown }
/** A CTE's columns of chat_messages as a nested selection, so drizzle maps them to a ChatMessageRow. */
const messageFieldsOf = <T extends MessageFields>(cte: T) =>
  Object.fromEntries(Object.keys(messageColumns).map((key) => [key, cte[key as keyof MessageFields]])) as {
    [K in keyof typeof messageColumns]: T[K]
  }

/**
 * A member's text post as one statement, so one round trip (its own transaction) and no client
 * round trip while the group's row is locked: lock the group, lock the author's membership after
 * it, insert the message only if both are there, and record it on the group and the author
 * (groupPostParts). Prepared by name: PostgreSQL parses and plans it once per connection.
 */
function memberPostStatement(db: Db) {
  const parts = groupPostParts(db)
  const group = parts.lockGroup(sql`${p('groupId')}::bigint`)
  const author = parts.lockAuthor(group, sql`${p('userId')}::bigint`)
  // drizzle's insert ... select wants every column (the identity too), so this one is written out.
  const posted = db.$with('posted', messageColumns).as(
    sql`insert into ${chatMessages} (${column(chatMessages.groupId)}, ${column(chatMessages.userId)},
      ${column(chatMessages.kind)}, ${column(chatMessages.body)}, ${column(chatMessages.createdAt)})
      select ${author.groupId}, ${author.userId}, 'user', ${p('body')}::text, ${p('at')}::timestamptz
      from ${author} returning *`,
  )
  return db
    .with(group, author, posted, parts.onGroup(posted), parts.onAuthor(posted))
    .select({ isPrivate: group.isPrivate, posted: messageFieldsOf(posted) })
    .from(group)
    .leftJoin(posted, sql`true`)
    .prepare('chat_member_post')
}

/** Messages and their attachments: every query of both. */
export function createMessagesRepository({ db }: { db: Db }) {
  const withAuthor = () =>
    db
      .select({
        id: chatMessages.id,
        groupId: chatMessages.groupId,
        kind: chatMessages.kind,
        body: chatMessages.body,
        createdAt: chatMessages.createdAt,
        authorId: users.id,
        authorName: users.name,
        authorPhoto: users.profilePhotoPath,
      })
      .from(chatMessages)
      .leftJoin(users, eq(users.id, chatMessages.userId))

  type Joined = Awaited<ReturnType<ReturnType<typeof withAuthor>['execute']>>[number]
  const toMessage = (row: Joined): MessageWithAuthor => ({
    id: row.id,
    groupId: row.groupId,
    kind: row.kind,
    body: row.body,
    createdAt: row.createdAt,
    author:
      row.authorId === null
        ? null
        : { id: row.authorId, name: row.authorName ?? '', profilePhotoPath: row.authorPhoto },
  })

  let memberPost: ReturnType<typeof memberPostStatement> | undefined

  return {
    /**
     * A member's text message, in one statement that takes the group's lock itself (call it outside
     * a transaction that holds other chat locks); writes nothing when the author is not a member.
     */
    async postAsMember(post: MemberPost): Promise<MemberPostOutcome> {
      memberPost ??= memberPostStatement(db)
      const [row] = await memberPost.execute({ ...post })
      if (!row) return { kind: 'no-group' }
      if (!row.posted) return { kind: 'not-member', group: { isPrivate: row.isPrivate } }
      return { kind: 'posted', message: row.posted }
    },

    async find(id: number): Promise<ChatMessageRow | undefined> {
      const [row] = await db.select().from(chatMessages).where(eq(chatMessages.id, id)).limit(1)
      return row
    },

    /**
     * Inserts a message and records it on its group (newest message, activity, counts: see
     * groupPostParts) in one statement. Call with the group row locked.
     */
    async insertPosted(values: NewMessage): Promise<ChatMessageRow> {
      const posted = db.$with('posted').as(db.insert(chatMessages).values(values).returning())
      const group = groupPostParts(db)
      const onGroup = group.onGroup(posted)
      const onAuthor = group.onAuthor(posted)
      const [row] = await db.with(posted, onGroup, onAuthor).select().from(posted)
      if (!row) throw new Error('message insert returned no row')
      return row
    },

    async insertAttachments(values: NewAttachment[]): Promise<ChatAttachmentRow[]> {
      if (values.length === 0) return []
      return db.insert(chatMessageAttachments).values(values).returning()
    },

    /**
     * Deletes a message (its attachments go with it, by foreign key); answers the paths of its files.
     * Call with the group row locked, then tell the group (groups repository, recordDeleted).
     */
    async delete(message: ChatMessageRow): Promise<string[]> {
      const files = await db
        .select({ path: chatMessageAttachments.path })
        .from(chatMessageAttachments)
        .where(eq(chatMessageAttachments.messageId, message.id))
      await db.delete(chatMessages).where(eq(chatMessages.id, message.id))
      return files.map((file) => file.path)
    },

    /**
     * Up to `limit` messages of a group older than `beforeId` (all when null), newest first, one
     * more than asked so the caller knows whether there are more. Keyset on the id, never OFFSET.
     */
    async page(groupId: number, beforeId: number | null, limit: number): Promise<MessageWithAuthor[]> {
      const rows = await withAuthor()
        .where(
          beforeId === null
            ? eq(chatMessages.groupId, groupId)
            : and(eq(chatMessages.groupId, groupId), lt(chatMessages.id, beforeId)),
        )
        .orderBy(desc(chatMessages.id))
        .limit(limit + 1)
      return rows.map(toMessage)
    },

    /** The attachments of these messages, in the order they were attached. */
    attachmentsOf(messageIds: number[]): Promise<ChatAttachmentRow[]> {
      if (messageIds.length === 0) return Promise.resolve([])
      return (
        db
          .select()
          .from(chatMessageAttachments)
          // One array parameter: a list of 200 placeholders costs ten times as much to build.
          .where(sql`${chatMessageAttachments.messageId} = any(${sql.param(messageIds)}::bigint[])`)
          .orderBy(asc(chatMessageAttachments.id))
      )
    },

    async attachment(messageId: number, attachmentId: number): Promise<ChatAttachmentRow | undefined> {
      const [row] = await db
        .select()
        .from(chatMessageAttachments)
        .where(
          and(eq(chatMessageAttachments.id, attachmentId), eq(chatMessageAttachments.messageId, messageId)),
        )
        .limit(1)
      return row
    },

    /** The stored files of every message of a group (to remove after the group is deleted). */
    async filesOfGroup(groupId: number): Promise<string[]> {
      const rows = await db
        .select({ path: chatMessageAttachments.path })
        .from(chatMessageAttachments)
        .innerJoin(chatMessages, eq(chatMessages.id, chatMessageAttachments.messageId))
        .where(eq(chatMessages.groupId, groupId))
      return rows.map((row) => row.path)
    },
  }
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
