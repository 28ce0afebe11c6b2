import type { Db } from '../../db/client.ts'
import { type SupportTicketRow, supportTickets } from '../../db/schema/index.ts'

export type NewSupportTicket = typeof supportTickets.$inferInsert

export function createSupportRepository({ db }: { db: Db }) {
  return {
    async insert(values: NewSupportTicket): Promise<SupportTicketRow> {
      const [row] = await db.insert(supportTickets).values(values).returning()
      if (!row) throw new Error('support ticket insert returned no row')
      return row
    },
  }
}
