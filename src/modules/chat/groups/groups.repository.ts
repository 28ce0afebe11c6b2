import {
  and,
  asc,
  desc,
  eq,
  inArray,
  lt,
  ne,
  type SQL,
  type SQLWrapper,
  sql,
  type WithSubquery,
} from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import {
  type ChatGroupRow,
  type ChatMemberRow,
  type ChatMessageRow,
  chatGroupMembers,
  chatGroups,
  chatMessages,
  type MemberRole,
  users,
} from '../../../db/schema/index.ts'

export type NewGroup = typeof chatGroups.$inferInsert

/** A member as the group view lists them. */
export interface MemberListing {
  id: number
  name: string
  profilePhotoPath: string | null
  role: MemberRole
  joinedAt: Date
}

/** Groups and their members: every query of both. */
export function createGroupsRepository({ db }: { db: Db }) {
  return {
    /**
     * After a message was deleted: members who had not read it yet count one unread fewer (it joins
     * their read count), and the group's newest message is looked up again. Call with the group row
     * locked.
     */
    async recordDeleted(message: ChatMessageRow): Promise<void> {
      if (message.kind !== 'system') {
        await db
          .update(chatGroupMembers)
          .set({ readCount: sql`${chatGroupMembers.readCount} + 1` })
          .where(
            and(
              eq(chatGroupMembers.groupId, message.groupId),
              lt(chatGroupMembers.lastReadMessageId, message.id),
              sql`${chatGroupMembers.userId} is distinct from ${message.userId}`,
            ),
          )
      }
      await db
        .update(chatGroups)
        .set({
          lastMessageId: sql`(select max(m.id) from ${chatMessages} m where m.group_id = ${message.groupId})`,
        })
        .where(and(eq(chatGroups.id, message.groupId), eq(chatGroups.lastMessageId, message.id)))
    },

    /**
     * The group, its row locked for the caller's transaction when `lock` is set (`share`: only
     * waits for, and holds off, the changes that lock it for update, such as posting).
     */
    async find(
      id: number,
      { lock = false }: { lock?: boolean | 'share' } = {},
    ): Promise<ChatGroupRow | undefined> {
      const query = db.select().from(chatGroups).where(eq(chatGroups.id, id)).limit(1)
      const [row] = lock ? await query.for(lock === 'share' ? 'share' : 'update') : await query
      return row
    },

    async insert(values: NewGroup): Promise<ChatGroupRow> {
      const [row] = await db.insert(chatGroups).values(values).returning()
      if (!row) throw new Error('group insert returned no row')
      return row
    },

    async update(id: number, values: Partial<NewGroup>): Promise<ChatGroupRow | undefined> {
      const [row] = await db.update(chatGroups).set(values).where(eq(chatGroups.id, id)).returning()
      return row
    },

    /** Deletes the group; its members, messages, attachments, requests and invites go with it. */
    async delete(id: number): Promise<void> {
      await db.delete(chatGroups).where(eq(chatGroups.id, id))
    },

    async membership(groupId: number, userId: number): Promise<ChatMemberRow | undefined> {
      const [row] = await db
        .select()
        .from(chatGroupMembers)
        .where(and(eq(chatGroupMembers.groupId, groupId), eq(chatGroupMembers.userId, userId)))
        .limit(1)
      return row
    },

    /**
     * Adds a member whose read marker starts at the group's newest message (history is not
     * unread) and counts them; false when they already belong. Call with the group row locked.
     */
    async addMember(group: ChatGroupRow, userId: number, role: MemberRole, now: Date): Promise<boolean> {
      const added = await db
        .insert(chatGroupMembers)
        .values({
          groupId: group.id,
          userId,
          role,
          lastReadMessageId: group.lastMessageId ?? 0,
          // Everything before joining counts as read.
          readCount: sql`(select ${chatGroups.conversationCount} from ${chatGroups} where ${chatGroups.id} = ${group.id})`,
          joinedAt: now,
        })
        .onConflictDoNothing()
        .returning({ userId: chatGroupMembers.userId })
      if (added.length === 0) return false
      await db
        .update(chatGroups)
        .set({ memberCount: sql`${chatGroups.memberCount} + 1` })
        .where(eq(chatGroups.id, group.id))
      return true
    },

    /** Removes a member and uncounts them; false when they did not belong. Call with the group row locked. */
    async removeMember(groupId: number, userId: number): Promise<boolean> {
      const removed = await db
        .delete(chatGroupMembers)
        .where(and(eq(chatGroupMembers.groupId, groupId), eq(chatGroupMembers.userId, userId)))
        .returning({ userId: chatGroupMembers.userId })
      if (removed.length === 0) return false
      await db
        .update(chatGroups)
        .set({ memberCount: sql`${chatGroups.memberCount} - 1` })
        .where(eq(chatGroups.id, groupId))
      return true
    },

    async setRole(groupId: number, userId: number, role: MemberRole): Promise<void> {
      await db
        .update(chatGroupMembers)
        .set({ role })
        .where(and(eq(chatGroupMembers.groupId, groupId), eq(chatGroupMembers.userId, userId)))
    },

    /** The members, owner first, then by when they joined. */
    listMembers(groupId: number): Promise<MemberListing[]> {
      return db
        .select({
          id: users.id,
          name: users.name,
          profilePhotoPath: users.profilePhotoPath,
          role: chatGroupMembers.role,
          joinedAt: chatGroupMembers.joinedAt,
        })
        .from(chatGroupMembers)
        .innerJoin(users, eq(users.id, chatGroupMembers.userId))
        .where(eq(chatGroupMembers.groupId, groupId))
        .orderBy(sql`${chatGroupMembers.role} = 'owner' desc`, asc(chatGroupMembers.joinedAt), asc(users.id))
    },

    async memberIds(groupId: number): Promise<number[]> {
      const rows = await db
        .select({ userId: chatGroupMembers.userId })
        .from(chatGroupMembers)
        .where(eq(chatGroupMembers.groupId, groupId))
      return rows.map((row) => row.userId)
    },

    /** A user's name (for system messages about them). */
    async userName(userId: number): Promise<string | undefined> {
      const [row] = await db.select({ name: users.name }).from(users).where(eq(users.id, userId)).limit(1)
      return row?.name
    },

    /** Which of these addresses (lowercased) belong to members of the group. */
    async memberEmailsAmong(groupId: number, emails: string[]): Promise<string[]> {
      if (emails.length === 0) return []
      const rows = await db
        .select({ email: sql<string>`lower(${users.email})` })
        .from(chatGroupMembers)
        .innerJoin(users, eq(users.id, chatGroupMembers.userId))
        .where(
          and(
            eq(chatGroupMembers.groupId, groupId),
            inArray(
              sql`lower(${users.email})`,
              emails.map((email) => email.toLowerCase()),
            ),
          ),
        )
      return rows.map((row) => row.email)
    },

    /** The member (other than `userId`) who joined first: who inherits a group its owner leaves behind. */
    async longestStandingOther(groupId: number, userId: number): Promise<number | undefined> {
      const [row] = await db
        .select({ userId: chatGroupMembers.userId })
        .from(chatGroupMembers)
        .where(and(eq(chatGroupMembers.groupId, groupId), ne(chatGroupMembers.userId, userId)))
        .orderBy(asc(chatGroupMembers.joinedAt), asc(chatGroupMembers.userId))
        .limit(1)
      return row?.userId
    },

    /**
     * Moves the member's read marker to `upTo` (never back) and recounts what is still unread after
     * it (normally nothing, unless a message arrived between the read and this write): the read
     * count becomes the group's conversation count less that. Call with the group row locked
     * (share will do), so no post is half-way through its counters meanwhile.
     */
    async markRead(groupId: number, userId: number, upTo: number): Promise<void> {
      const marker = sql`greatest(${chatGroupMembers.lastReadMessageId}, ${upTo})`
      await db
        .update(chatGroupMembers)
        .set({
          lastReadMessageId: marker,
          readCount: sql`(select ${chatGroups.conversationCount} from ${chatGroups} where ${chatGroups.id} = ${groupId})
            - (select count(*)::int from ${chatMessages} m
            where m.group_id = ${groupId} and m.id > ${marker} and m.kind <> 'system'
            and m.user_id is distinct from ${userId})`,
        })
        .where(and(eq(chatGroupMembers.groupId, groupId), eq(chatGroupMembers.userId, userId)))
    },

    /**
     * The groups of a member with their unread counts and newest messages (and those messages'
     * authors), most recent activity first: one query, whatever the number of groups.
     */
    conversations(userId: number) {
      return db
        .select({
          group: chatGroups,
          unreadCount: sql<number>`${chatGroups.conversationCount} - ${chatGroupMembers.readCount}`,
          lastMessage: {
            id: chatMessages.id,
            groupId: chatMessages.groupId,
            kind: chatMessages.kind,
            body: chatMessages.body,
            createdAt: chatMessages.createdAt,
          },
          author: { id: users.id, name: users.name, profilePhotoPath: users.profilePhotoPath },
        })
        .from(chatGroupMembers)
        .innerJoin(chatGroups, eq(chatGroups.id, chatGroupMembers.groupId))
        .leftJoin(chatMessages, eq(chatMessages.id, chatGroups.lastMessageId))
        .leftJoin(users, eq(users.id, chatMessages.userId))
        .where(eq(chatGroupMembers.userId, userId))
        .orderBy(desc(chatGroups.lastActivityAt), desc(chatGroups.id))
    },

    /** Ids of the groups a user belongs to, in id order (the order a change to several locks them in). */
    async groupIdsOf(userId: number): Promise<number[]> {
      const rows = await db
        .select({ id: chatGroupMembers.groupId })
        .from(chatGroupMembers)
        .where(eq(chatGroupMembers.userId, userId))
        .orderBy(asc(chatGroupMembers.groupId))
      return rows.map((row) => row.id)
    },

    /** Whether the two users belong to at least one group together. */
    async shareAGroup(userId: number, otherId: number): Promise<boolean> {
      const [row] = await db
        .select({ one: sql<number>`1` })
        .from(chatGroupMembers)
        .where(
          and(
            eq(chatGroupMembers.userId, userId),
            sql`exists (select 1 from ${chatGroupMembers} o where o.group_id = ${chatGroupMembers.groupId}
              and o.user_id = ${otherId})`,
          ),
        )
        .limit(1)
      return row !== undefined
    },
  }
}

export type GroupsRepository = ReturnType<typeof createGroupsRepository>

/**
 * A member's unread count: the group's conversation messages not in their read count (never below
 * zero: the two rows may be read either side of the member's own post).
 */
export const unreadCountOf = (group: ChatGroupRow, member: ChatMemberRow): number =>
  Math.max(0, group.conversationCount - member.readCount)

/** The columns of a just-inserted message that its group's record reads. */
interface PostedMessage {
  id: SQLWrapper
  groupId: SQLWrapper
  userId: SQLWrapper
  kind: SQLWrapper
  createdAt: SQLWrapper
}

/**
 * The group's part of the one statement that posts a message (the messages repository composes
 * it): what recordPosted does, for the message a CTE inserts in the same statement, so a post is
 * one round trip under the group's lock and the SQL that writes the group's rows stays here.
 */
export function groupPostParts(db: Db) {
  return {
    /**
     * The group's row locked for update, the lock every change to the group takes first: a post
     * draws its message id under it, so ids grow in the order posts commit within the group.
     */
    lockGroup(groupId: SQL) {
      return db
        .$with('post_group')
        .as(
          db
            .select({ id: chatGroups.id, isPrivate: chatGroups.isPrivate })
            .from(chatGroups)
            .where(eq(chatGroups.id, groupId))
            .for('update'),
        )
    },

    /**
     * The author's membership, locked for share once the group's lock is held (the condition on
     * `group` orders it after): locking reads the newest row, so a removal committed while the
     * post waited for the group is seen, though the statement's snapshot is older.
     */
    lockAuthor(group: WithSubquery & { id: SQLWrapper }, userId: SQL) {
      return db.$with('post_author').as(
        db
          .select({ groupId: chatGroupMembers.groupId, userId: chatGroupMembers.userId })
          .from(chatGroupMembers)
          .where(
            and(
              sql`${chatGroupMembers.groupId} = (select ${group.id} from ${group})`,
              eq(chatGroupMembers.userId, userId),
            ),
          )
          .for('share'),
      )
    },

    /** The group's newest message and activity, and its conversation count for a conversation message. */
    onGroup(posted: WithSubquery & PostedMessage) {
      return db.$with('group_posted').as(
        db
          .update(chatGroups)
          .set({
            lastMessageId: sql`${posted.id}`,
            lastActivityAt: sql`${posted.createdAt}`,
            conversationCount: sql`${chatGroups.conversationCount} + (case when ${posted.kind} <> 'system' then 1 else 0 end)`,
          })
          .from(posted)
          .where(eq(chatGroups.id, posted.groupId as SQL))
          .returning({ id: chatGroups.id }),
      )
    },

    /** The author's read count, for a conversation message: their own is never unread for them. */
    onAuthor(posted: WithSubquery & PostedMessage) {
      return db.$with('author_read').as(
        db
          .update(chatGroupMembers)
          .set({ readCount: sql`${chatGroupMembers.readCount} + 1` })
          .from(posted)
          .where(
            and(
              eq(chatGroupMembers.groupId, posted.groupId as SQL),
              eq(chatGroupMembers.userId, posted.userId as SQL),
              sql`${posted.kind} <> 'system'`,
            ),
          )
          .returning({ userId: chatGroupMembers.userId }),
      )
    },
  }
}
