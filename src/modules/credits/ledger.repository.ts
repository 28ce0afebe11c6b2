import { and, count, desc, eq, type SQL, type SQLWrapper, sql, type WithSubquery } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import {
  type CreditAccountRow,
  type CreditTransactionRow,
  creditAccounts,
  creditPurchases,
  creditTransactions,
} from '../../db/schema/index.ts'

/** A ledger row and the purchase it belongs to: bought, refunded or disputed (null for the others). */
export interface TransactionWithPurchase {
  transaction: CreditTransactionRow
  purchase: { packageId: string; checkoutSessionId: string; createdAt: Date } | null
}

export type LedgerKind =
  | 'purchase'
  | 'admin_adjustment'
  | 'package'
  | 'hold_capture'
  | 'feature_use'
  /** Credits taken back for a refunded payment (in proportion to the amount refunded). */
  | 'refund'
  /** Credits withheld while the payment is disputed (a chargeback). */
  | 'dispute_withheld'
  /** Withheld credits given back: the dispute was won. */
  | 'dispute_returned'
  /** The balance a user had in the Laravel original, brought across once by `import:laravel-credits`. */
  | 'opening_balance'

export interface NewLedgerRow {
  userId: number
  amount: string
  kind: LedgerKind
  reference?: string | null
  reason?: string | null
  adminId?: number | null
  purchaseId?: number | null
  holdId?: number | null
  aiCallId?: number | null
}

// Decimal strings go to SQL as numeric parameters: the arithmetic is PostgreSQL's, never a float's.
const numeric = (value: string) => sql`${value}::numeric`

/** Every query on credit_accounts and credit_transactions; takes a db or a transaction. */
export function createLedgerRepository({ db }: { db: Db }) {
  // Read on every answer that carries the user's credit figures (GET /api/user, GET /api/credits):
  // prepared by name, so neither the SQL is built nor the statement planned again per request.
  let accountOf: ReturnType<typeof prepareAccountOf> | undefined
  const prepareAccountOf = () =>
    db
      .select()
      .from(creditAccounts)
      .where(eq(creditAccounts.userId, sql.placeholder('userId')))
      .limit(1)
      .prepare('credit_account_of')
  return {
    /** Sets the user's current package (the account row exists and is locked by the caller). */
    async setCurrentPackage(userId: number, packageId: string, now: Date): Promise<void> {
      await db
        .update(creditAccounts)
        .set({ currentPackageId: packageId, updatedAt: now })
        .where(eq(creditAccounts.userId, userId))
    },

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
      accountOf ??= prepareAccountOf()
      const [row] = await accountOf.execute({ userId })
      return row
    },

    /**
     * Adds `amount` (signed) to the balance; answers the new balance, or undefined when refused. A
     * credit is never refused; a debit is, when it leaves less than the held credits, unless
     * `anyBalance` (a reversal: the credits go back whatever is left).
     */
    async addToBalance(
      userId: number,
      amount: string,
      now: Date,
      anyBalance = false,
    ): Promise<string | undefined> {
      const value = numeric(amount)
      const [row] = await db
        .update(creditAccounts)
        .set({ balance: sql`${creditAccounts.balance} + ${value}`, updatedAt: now })
        .where(
          and(
            eq(creditAccounts.userId, userId),
            anyBalance
              ? undefined
              : sql`(${value} > 0 or ${creditAccounts.balance} + ${value} - ${creditAccounts.held} >= 0)`,
          ),
        )
        .returning({ balance: creditAccounts.balance })
      return row?.balance
    },

    /**
     * Adds `amount` to the held credits when the spendable credits (balance - held) cover it;
     * answers the new held total, or undefined when refused (the account locked by the caller).
     */
    async addToHeld(userId: number, amount: string, now: Date): Promise<string | undefined> {
      const value = numeric(amount)
      const [row] = await db
        .update(creditAccounts)
        .set({ held: sql`${creditAccounts.held} + ${value}`, updatedAt: now })
        .where(
          and(
            eq(creditAccounts.userId, userId),
            sql`${creditAccounts.balance} - ${creditAccounts.held} - ${value} >= 0`,
          ),
        )
        .returning({ held: creditAccounts.held })
      return row?.held
    },

    /** The user's oldest ledger row of `kind` (the unique index makes an opening balance the only one). */
    async firstOfKind(userId: number, kind: LedgerKind): Promise<CreditTransactionRow | undefined> {
      const [row] = await db
        .select()
        .from(creditTransactions)
        .where(and(eq(creditTransactions.userId, userId), eq(creditTransactions.kind, kind)))
        .orderBy(creditTransactions.id)
        .limit(1)
      return row
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
          purchaseId: entry.purchaseId ?? null,
          holdId: entry.holdId ?? null,
          aiCallId: entry.aiCallId ?? null,
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

    /**
     * One page of the user's ledger, newest first (ids grow with time), each row with the purchase
     * it belongs to (if any).
     */
    async pageTransactions(
      userId: number,
      limit: number,
      offset: number,
    ): Promise<TransactionWithPurchase[]> {
      return db
        .select({
          transaction: creditTransactions,
          purchase: {
            packageId: creditPurchases.packageId,
            checkoutSessionId: creditPurchases.checkoutSessionId,
            createdAt: creditPurchases.createdAt,
          },
        })
        .from(creditTransactions)
        .leftJoin(creditPurchases, eq(creditPurchases.id, creditTransactions.purchaseId))
        .where(eq(creditTransactions.userId, userId))
        .orderBy(desc(creditTransactions.id))
        .limit(limit)
        .offset(offset)
    },
  }
}

const column = (c: { name: string }) => sql.identifier(c.name)

/** The columns of a just-settled hold that its ledger effect reads. */
interface SettledHold {
  id: SQLWrapper
  userId: SQLWrapper
  creditsAmount: SQLWrapper
  brokerParentOrderId: SQLWrapper
}

/**
 * The ledger's parts of the one-statement hold changes (holds.repository composes them into its
 * prepared statements): the user's account row locked, credits reserved or given back, a capture's
 * debit appended. So the SQL that writes credit_accounts and credit_transactions stays here, in
 * the ledger's repository. Placeholders: `userId`; the caller names the amount and the time.
 */
export function ledgerStatementParts(db: Db) {
  const userIs = eq(creditAccounts.userId, sql.placeholder('userId'))
  // The lock every credit operation takes first.
  const account = db
    .$with('account')
    .as(
      db
        .select({ balance: creditAccounts.balance, held: creditAccounts.held })
        .from(creditAccounts)
        .where(userIs)
        .for('update'),
    )
  const locked = sql`exists (select 1 from ${account})`

  return {
    account,
    locked,

    /** Adds `amount` to held, where `condition` holds and spendable credits cover it; returns the user's id. */
    reserve(amount: SQL, now: SQL, condition: SQL) {
      return db.$with('reserved').as(
        db
          .update(creditAccounts)
          .set({ held: sql`${creditAccounts.held} + ${amount}`, updatedAt: now })
          .where(
            and(
              userIs,
              locked,
              condition,
              sql`${creditAccounts.balance} - (${creditAccounts.held} + ${amount}) >= 0`,
            ),
          )
          .returning({ userId: creditAccounts.userId }),
      )
    },

    /** Gives back the settled hold's credits from held (and, for a capture, takes them off the balance). */
    settle(settled: WithSubquery & SettledHold, captured: boolean, now: SQL) {
      return db.$with('moved').as(
        db
          .update(creditAccounts)
          .set({
            held: sql`${creditAccounts.held} - ${settled.creditsAmount}`,
            ...(captured ? { balance: sql`${creditAccounts.balance} - ${settled.creditsAmount}` } : {}),
            updatedAt: now,
          })
          .from(settled)
          // The user's id as a parameter too, so the row is found by its key, however many accounts.
          .where(and(userIs, eq(creditAccounts.userId, settled.userId as SQL)))
          .returning({ balance: creditAccounts.balance }),
      )
    },

    /**
     * A capture's `hold_capture` debit. The balance the account update answers is this row's
     * balance_after: the account stays locked until commit, so ledger rows of one user get their
     * ids in the order of their balances.
     */
    captureDebit(
      settled: WithSubquery & SettledHold,
      moved: WithSubquery & { balance: SQLWrapper },
      now: SQL,
    ) {
      return db.$with('debit', { id: creditTransactions.id }).as(
        sql`insert into ${creditTransactions} (${column(creditTransactions.userId)}, ${column(creditTransactions.amount)},
          ${column(creditTransactions.kind)}, ${column(creditTransactions.reference)},
          ${column(creditTransactions.holdId)}, ${column(creditTransactions.balanceAfter)}, ${column(creditTransactions.createdAt)})
          select ${settled.userId}, -${settled.creditsAmount}, 'hold_capture', ${settled.brokerParentOrderId},
          ${settled.id}, ${moved.balance}, ${now} from ${settled}, ${moved} returning ${column(creditTransactions.id)}`,
      )
    },
  }
}
