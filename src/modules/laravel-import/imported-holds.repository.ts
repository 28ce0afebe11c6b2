import { inArray } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { laravelImportedHolds } from '../../db/schema/index.ts'

/** Every query on laravel_imported_holds; takes a db or a transaction. */
export function createImportedHoldsRepository({ db }: { db: Db }) {
  return {
    /** Records where an imported hold came from, in the transaction that placed it. */
    async record(row: {
      holdId: number
      reference: string
      originalCreatedAt: Date
      importedAt: Date
    }): Promise<void> {
      await db.insert(laravelImportedHolds).values(row)
    },

    /** The import reference of each of these holds that an import placed, by hold id. */
    async referencesOf(holdIds: number[]): Promise<Map<number, string>> {
      if (holdIds.length === 0) return new Map()
      const rows = await db
        .select({ holdId: laravelImportedHolds.holdId, reference: laravelImportedHolds.reference })
        .from(laravelImportedHolds)
        .where(inArray(laravelImportedHolds.holdId, holdIds))
      return new Map(rows.map((row) => [row.holdId, row.reference]))
    },
  }
}
