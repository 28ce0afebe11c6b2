import { and, count, desc, eq, sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import {
  type CreditAccountRow,
  type CreditTransactionRow,
  creditAccounts,
  creditTransactions,
} from '../../db/schema/index.ts'

export type LedgerKind = 'purchase' | 'admin_adjustment' | 'package' | 'hold_capture' | 'feature_use'

export interface NewLedgerRow {
  userId: number
  amount: string
  kind: LedgerKind
  reference?: string | null
  reason?: string | null
  adminId?: number | null
}

// Decimal strings go to SQL as numeric parameters: the arithmetic is PostgreSQL's, never a float's.
const numeric = (value: string) => sql`${value}::numeric`

/** Every query on credit_accounts and credit_transactions; takes a db or a transaction. */
export function createLedgerRepository({ db }: { db: Db }) {
  return {
    /** The user's account row, locked until the transaction ends (SELECT ... FOR UPDATE). */
    async lockAccount(userId: number): Promise<CreditAccountRow | undefined> {
      const [row] = await db
        .select()
        .from(creditAccounts)
        .where(eq(creditAccounts.userId, userId))
        .for('update')
      return row
    },

    /** Creates the user's empty account unless it exists (a racing creator wins, quietly). */
    async ensureAccount(userId: number, now: Date): Promise<void> {
      await db
        .insert(creditAccounts)
        .values({ userId, createdAt: now, updatedAt: now })
        .onConflictDoNothing({ target: creditAccounts.userId })
    },

    async findAccount(userId: number): Promise<CreditAccountRow | undefined> {
      const [row] = await db.select().from(creditAccounts).where(eq(creditAccounts.userId, userId)).limit(1)
      return row
    },

    /**
     * Adds `amount` (signed) to the balance unless that leaves less than the held credits; answers
     * the new balance, or undefined when refused.
     */
    async addToBalance(userId: number, amount: string, now: Date): Promise<string | undefined> {
      const [row] = await db
        .update(creditAccounts)
        .set({ balance: sql`${creditAccounts.balance} + ${numeric(amount)}`, updatedAt: now })
        .where(
          and(
            eq(creditAccounts.userId, userId),
            sql`${creditAccounts.balance} + ${numeric(amount)} - ${creditAccounts.held} >= 0`,
          ),
        )
        .returning({ balance: creditAccounts.balance })
      return row?.balance
    },

    async insertTransaction(
      entry: NewLedgerRow & { balanceAfter: string; createdAt: Date },
    ): Promise<CreditTransactionRow> {
      const [row] = await db
        .insert(creditTransactions)
        .values({
          userId: entry.userId,
          amount: entry.amount,
          kind: entry.kind,
          reference: entry.reference ?? null,
          reason: entry.reason ?? null,
          adminId: entry.adminId ?? null,
          balanceAfter: entry.balanceAfter,
          createdAt: entry.createdAt,
        })
        .returning()
      if (!row) throw new Error('credit_transactions insert returned no row')
      return row
    },

    async countTransactions(userId: number): Promise<number> {
      const [row] = await db
        .select({ n: count() })
        .from(creditTransactions)
        .where(eq(creditTransactions.userId, userId))
      return row?.n ?? 0
    },

    /** One page of the user's ledger, newest first (ids grow with time). */
    async pageTransactions(userId: number, limit: number, offset: number): Promise<CreditTransactionRow[]> {
      return db
        .select()
        .from(creditTransactions)
        .where(eq(creditTransactions.userId, userId))
        .orderBy(desc(creditTransactions.id))
        .limit(limit)
        .offset(offset)
    },
  }
}
