import { and, count, desc, eq, inArray, max, sql, sum } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { creditAccounts, creditTransactions, paymentEvents } from '../../db/schema/index.ts'

export interface PaymentEvent {
  id: string
  type: string
  checkoutSessionId: string | null
  createdAt: Date
}

export interface FeatureUse {
  featureId: string | null
  uses: number
  /** The credits spent, as the (positive) decimal string PostgreSQL summed. */
  credits: string
  lastUsedAt: Date | null
}

/**
 * Billing's own queries: the payment events handled, the current package, and the reports it reads
 * from the ledger. Every credit change goes through the ledger service, never through here.
 */
export function createBillingRepository({ db }: { db: Db }) {
  return {
    /** Records a payment-provider event as handled; false when it already was (a retried delivery). */
    async recordPaymentEvent(event: PaymentEvent): Promise<boolean> {
      const rows = await db
        .insert(paymentEvents)
        .values(event)
        .onConflictDoNothing({ target: paymentEvents.id })
        .returning({ id: paymentEvents.id })
      return rows.length > 0
    },

    /** Whether a checkout session has already been credited (the ledger's purchase reference). */
    async purchaseCredited(checkoutSessionId: string): Promise<boolean> {
      const [row] = await db
        .select({ id: creditTransactions.id })
        .from(creditTransactions)
        .where(
          and(eq(creditTransactions.kind, 'purchase'), eq(creditTransactions.reference, checkoutSessionId)),
        )
        .limit(1)
      return row !== undefined
    },

    async currentPackageId(userId: number): Promise<string | null> {
      const [row] = await db
        .select({ id: creditAccounts.currentPackageId })
        .from(creditAccounts)
        .where(eq(creditAccounts.userId, userId))
        .limit(1)
      return row?.id ?? null
    },

    /**
     * The user's used features, most used first: `feature_use` ledger rows grouped by feature (the
     * row's reference), and hold captures as `automated_order` (a captured hold is an automated
     * order paid for: its credits are the hold's).
     */
    async featureUses(userId: number): Promise<FeatureUse[]> {
      const featureId = sql<
        string | null
      >`case when ${creditTransactions.kind} = 'hold_capture' then 'automated_order' else ${creditTransactions.reference} end`
      const rows = await db
        .select({
          featureId,
          uses: count(),
          credits: sql<string>`-${sum(creditTransactions.amount)}`,
          lastUsedAt: max(creditTransactions.createdAt),
        })
        .from(creditTransactions)
        .where(
          and(
            eq(creditTransactions.userId, userId),
            inArray(creditTransactions.kind, ['feature_use', 'hold_capture']),
          ),
        )
        .groupBy(featureId)
        .orderBy(desc(count()), featureId)
      return rows.map((row) => ({ ...row, credits: String(row.credits) }))
    },
  }
}
