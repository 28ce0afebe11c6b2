import { and, asc, eq, gte, lt, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { creditPurchases, creditTransactions } from '../../db/schema/index.ts'

/** The ledger rows of a period: created_at from `from` (inclusive) to `to` (exclusive), ISO timestamps. */
export interface LedgerExportFilter {
  from: string
  to: string
  /** Only this user's rows. */
  userId?: number
}

/** One credit_transactions row as the export reads it: numbers as exact decimal strings. */
export interface LedgerExportRow {
  id: number
  /** ISO 8601 in UTC to the microsecond, as stored: `2026-11-30T09:15:00.123456Z`. */
  createdAt: string
  userId: number
  kind: string
  amount: string
  balanceAfter: string
  reason: string | null
  reference: string | null
  adminId: number | null
  purchaseId: number | null
  holdId: number | null
  aiCallId: number | null
  /** From the row's purchase (credit_purchases), when it has one. */
  checkoutSessionId: string | null
  paymentIntentId: string | null
}

const t = creditTransactions

// The timestamp as text, to the microsecond: a JS Date stops at the millisecond, so the keyset
// cursor below would skip or repeat rows that share one.
const createdAtText = sql<string>`to_char(${t.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

// A column of the row's purchase, looked up by its key per row. Not a join: with one, the planner
// may join the whole period and sort it for every batch, where this stays an index scan that stops
// at the batch's last row.
const ofPurchase = (
  column: typeof creditPurchases.checkoutSessionId | typeof creditPurchases.paymentIntentId,
) =>
  sql<string | null>`(select ${column} from ${creditPurchases} where ${creditPurchases.id} = ${t.purchaseId})`

/** Reads credit_transactions for the ledger export; takes a db or a transaction. */
export function createLedgerExportRepository({ db }: { db: Db }) {
  /** One batch in (created_at, id) order after the cursor: the (created_at, id) index serves it. */
  const batch = (
    filter: LedgerExportFilter,
    after: { createdAt: string; id: number } | null,
    limit: number,
  ) => {
    const conditions: (SQL | undefined)[] = [
      gte(t.createdAt, sql`${filter.from}::timestamptz`),
      lt(t.createdAt, sql`${filter.to}::timestamptz`),
      filter.userId === undefined ? undefined : eq(t.userId, filter.userId),
      after ? sql`(${t.createdAt}, ${t.id}) > (${after.createdAt}::timestamptz, ${after.id})` : undefined,
    ]
    return db
      .select({
        id: t.id,
        createdAt: createdAtText,
        userId: t.userId,
        kind: t.kind,
        amount: t.amount,
        balanceAfter: t.balanceAfter,
        reason: t.reason,
        reference: t.reference,
        adminId: t.adminId,
        purchaseId: t.purchaseId,
        holdId: t.holdId,
        aiCallId: t.aiCallId,
        checkoutSessionId: ofPurchase(creditPurchases.checkoutSessionId),
        paymentIntentId: ofPurchase(creditPurchases.paymentIntentId),
      })
      .from(t)
      .where(and(...conditions))
      .orderBy(asc(t.createdAt), asc(t.id))
      .limit(limit)
  }

  return {
    /**
     * The period's rows in (created_at, id) order, `batchSize` at a time: keyset pagination, one
     * short statement per batch (PGlite and PostgreSQL alike, through a transaction pooler too), so
     * memory holds one batch whatever the period's size. The next batch is read only when the
     * consumer asks for it.
     */
    async *batches(filter: LedgerExportFilter, batchSize = 2_000): AsyncGenerator<LedgerExportRow[]> {
      let after: { createdAt: string; id: number } | null = null
      for (;;) {
        const rows: LedgerExportRow[] = await batch(filter, after, batchSize)
        if (rows.length > 0) yield rows
        const last = rows.at(-1)
        if (!last || rows.length < batchSize) return
        after = { createdAt: last.createdAt, id: last.id }
      }
    },
  }
}
