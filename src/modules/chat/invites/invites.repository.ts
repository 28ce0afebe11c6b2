import { and, asc, eq, gt, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import {
  type ChatInviteRow,
  chatGroups,
  chatInvites,
  type StoredInviteStatus,
  users,
} from '../../../db/schema/index.ts'

/** An invite with the names it is shown with. */
export interface InviteListing {
  invite: ChatInviteRow
  group: { id: number; name: string; memberCount: number }
  inviter: { id: number; name: string } | null
}

/** Invitations by email: every query of them. */
export function createInvitesRepository({ db }: { db: Db }) {
  const listing = () =>
    db
      .select({
        invite: chatInvites,
        group: { id: chatGroups.id, name: chatGroups.name, memberCount: chatGroups.memberCount },
        inviterId: users.id,
        inviterName: users.name,
      })
      .from(chatInvites)
      .innerJoin(chatGroups, eq(chatGroups.id, chatInvites.groupId))
      .leftJoin(users, eq(users.id, chatInvites.invitedBy))

  type Row = Awaited<ReturnType<ReturnType<typeof listing>['execute']>>[number]
  const toListing = (row: Row): InviteListing => ({
    invite: row.invite,
    group: row.group,
    inviter: row.inviterId === null ? null : { id: row.inviterId, name: row.inviterName ?? '' },
  })

  return {
    /**
     * The pending invite of `email` to the group with a new token and expiry: refreshed when there
     * is one (its old link stops working, unless `keepToken`), created otherwise.
     */
    async upsertPending({
      keepToken = false,
      ...values
    }: {
      groupId: number
      email: string
      tokenHash: string
      keepToken?: boolean
      invitedBy: number
      expiresAt: Date
      now: Date
    }): Promise<ChatInviteRow> {
      const [row] = await db
        .insert(chatInvites)
        .values({ ...values, status: 'pending', createdAt: values.now, updatedAt: values.now })
        .onConflictDoUpdate({
          target: [chatInvites.groupId, chatInvites.email],
          targetWhere: sql`${chatInvites.status} = 'pending'`,
          set: {
            ...(keepToken ? {} : { tokenHash: values.tokenHash }),
            invitedBy: values.invitedBy,
            expiresAt: values.expiresAt,
            updatedAt: values.now,
          },
        })
        .returning()
      if (!row) throw new Error('invite upsert returned no row')
      return row
    },

    async find(id: number, { lock = false } = {}): Promise<ChatInviteRow | undefined> {
      const query = db.select().from(chatInvites).where(eq(chatInvites.id, id)).limit(1)
      const [row] = lock ? await query.for('update') : await query
      return row
    },

    async findByTokenHash(tokenHash: string): Promise<ChatInviteRow | undefined> {
      const [row] = await db.select().from(chatInvites).where(eq(chatInvites.tokenHash, tokenHash)).limit(1)
      return row
    },

    async listing(id: number): Promise<InviteListing | undefined> {
      const [row] = await listing().where(eq(chatInvites.id, id)).limit(1)
      return row && toListing(row)
    },

    async listingByTokenHash(tokenHash: string): Promise<InviteListing | undefined> {
      const [row] = await listing().where(eq(chatInvites.tokenHash, tokenHash)).limit(1)
      return row && toListing(row)
    },

    /** The invites to `email` (any case: stored lowercased) still waiting for an answer, oldest first. */
    async pendingFor(email: string, now: Date): Promise<InviteListing[]> {
      const rows = await listing()
        .where(
          and(
            eq(chatInvites.email, email.toLowerCase()),
            eq(chatInvites.status, 'pending'),
            gt(chatInvites.expiresAt, now),
          ),
        )
        .orderBy(asc(chatInvites.id))
      return rows.map(toListing)
    },

    async setStatus(id: number, status: StoredInviteStatus, now: Date): Promise<void> {
      await db
        .update(chatInvites)
        .set({ status, respondedAt: now, updatedAt: now })
        .where(eq(chatInvites.id, id))
    },

    async refresh(id: number, tokenHash: string, expiresAt: Date, now: Date): Promise<void> {
      await db.update(chatInvites).set({ tokenHash, expiresAt, updatedAt: now }).where(eq(chatInvites.id, id))
    },
  }
}

export type InvitesRepository = ReturnType<typeof createInvitesRepository>
