import { and, asc, desc, eq, sql } from 'drizzle-orm'
import { alias } from 'drizzle-orm/pg-core'
import type { Db } from '../../../db/client.ts'
import {
  type ChatAnalysisRow,
  type ChatAttachmentRow,
  chatAnalyses,
  chatGroupMembers,
  chatGroups,
  chatMessageAttachments,
  chatMessages,
  users,
} from '../../../db/schema/index.ts'

/** An analysis with what its listing shows: the group's name, the question and its author, the answer. */
export interface AnalysisListRow {
  analysis: ChatAnalysisRow
  groupName: string
  questionBody: string
  author: { id: number; name: string } | null
  answerBody: string | null
}

const answers = alias(chatMessages, 'answers')

/** Every query on `chat_analyses`; `db` may be a transaction. */
export function createAnalysisRepository({ db }: { db: Db }) {
  const inGroupsOf = (userId: number) =>
    sql`exists (select 1 from ${chatGroupMembers} where ${chatGroupMembers.groupId} = ${chatAnalyses.groupId} and ${chatGroupMembers.userId} = ${userId})`

  return {
    async insert(values: { groupId: number; questionMessageId: number; model: string; createdAt: Date }) {
      const [row] = await db
        .insert(chatAnalyses)
        .values({ ...values, status: 'pending' })
        .returning()
      if (!row) throw new Error('chat_analyses insert returned nothing')
      return row
    },

    /** The analysis, locked for the caller's transaction when `lock` is set. */
    async find(id: number, { lock = false } = {}): Promise<ChatAnalysisRow | undefined> {
      const query = db.select().from(chatAnalyses).where(eq(chatAnalyses.id, id)).limit(1)
      const [row] = lock ? await query.for('update') : await query
      return row
    },

    async finish(
      id: number,
      values: { status: 'completed' | 'failed'; answerMessageId: number | null; at: Date },
    ) {
      await db
        .update(chatAnalyses)
        .set({ status: values.status, answerMessageId: values.answerMessageId, completedAt: values.at })
        .where(eq(chatAnalyses.id, id))
    },

    /** The question message's text and its files, oldest file first. */
    async question(messageId: number) {
      const [message] = await db
        .select({ body: chatMessages.body, userId: chatMessages.userId })
        .from(chatMessages)
        .where(eq(chatMessages.id, messageId))
      const files = await db
        .select()
        .from(chatMessageAttachments)
        .where(eq(chatMessageAttachments.messageId, messageId))
        .orderBy(asc(chatMessageAttachments.id))
      return message ? { body: message.body, authorId: message.userId, files } : undefined
    },

    /** How many analyses the groups `userId` belongs to hold. */
    async countFor(userId: number): Promise<number> {
      const [row] = await db
        .select({ count: sql<number>`count(*)::int` })
        .from(chatAnalyses)
        .where(inGroupsOf(userId))
      return row?.count ?? 0
    },

    /** A page of those analyses, newest first. */
    async pageFor(userId: number, limit: number, offset: number): Promise<AnalysisListRow[]> {
      const rows = await db
        .select({
          analysis: chatAnalyses,
          groupName: chatGroups.name,
          questionBody: chatMessages.body,
          authorId: users.id,
          authorName: users.name,
          answerBody: answers.body,
        })
        .from(chatAnalyses)
        .innerJoin(chatGroups, eq(chatGroups.id, chatAnalyses.groupId))
        .innerJoin(chatMessages, eq(chatMessages.id, chatAnalyses.questionMessageId))
        .leftJoin(users, eq(users.id, chatMessages.userId))
        .leftJoin(answers, and(eq(answers.id, chatAnalyses.answerMessageId)))
        .where(inGroupsOf(userId))
        .orderBy(desc(chatAnalyses.id))
        .limit(limit)
        .offset(offset)
      return rows.map((row) => ({
        analysis: row.analysis,
        groupName: row.groupName,
        questionBody: row.questionBody,
        author:
          row.authorId !== null && row.authorName !== null
            ? { id: row.authorId, name: row.authorName }
            : null,
        answerBody: row.answerBody,
      }))
    },

    async attachmentsOf(messageIds: number[]): Promise<ChatAttachmentRow[]> {
      if (messageIds.length === 0) return []
      return db
        .select()
        .from(chatMessageAttachments)
        .where(sql`${chatMessageAttachments.messageId} = any(${sql.param(messageIds)}::bigint[])`)
        .orderBy(asc(chatMessageAttachments.id))
    },
  }
}

export type AnalysisRepository = ReturnType<typeof createAnalysisRepository>
