import { and, desc, eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { type ActivityRow, activities } from '../../db/schema/index.ts'

export type NewActivity = Omit<typeof activities.$inferInsert, 'id'>

/** Every query on activities; each one reads through the owner's id. */
export function createActivitiesRepository({ db }: { db: Db }) {
  return {
    /** The user's newest activities first (ids grow with time). */
    latest(userId: number, limit: number): Promise<ActivityRow[]> {
      return db
        .select()
        .from(activities)
        .where(eq(activities.userId, userId))
        .orderBy(desc(activities.id))
        .limit(limit)
    },

    async insert(values: NewActivity): Promise<ActivityRow> {
      const [row] = await db.insert(activities).values(values).returning()
      if (!row) throw new Error('activities insert returned no row')
      return row
    },

    /** Deletes the activity only when it is the user's; answers whether it did. */
    async deleteOwned(userId: number, id: number): Promise<boolean> {
      const rows = await db
        .delete(activities)
        .where(and(eq(activities.id, id), eq(activities.userId, userId)))
        .returning({ id: activities.id })
      return rows.length > 0
    },
  }
}
