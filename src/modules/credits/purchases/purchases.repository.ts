import { eq } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { type CreditPurchaseRow, creditPurchases } from '../../../db/schema/index.ts'

export interface NewPurchase {
  userId: number
  checkoutSessionId: string
  packageId: string
  credits: string
  amount: number
  currency: string
  createdAt: Date
}

export type PurchaseChanges = Partial<
  Pick<
    CreditPurchaseRow,
    | 'paymentIntentId'
    | 'status'
    | 'amountRefunded'
    | 'creditsRefunded'
    | 'disputeId'
    | 'disputeStatus'
    | 'creditsDisputed'
    | 'paidAt'
  >
>

/** Every query on credit_purchases; takes a db or a transaction. */
export function createPurchasesRepository({ db }: { db: Db }) {
  return {
    /** Records a checkout as it starts; a session id seen before keeps its first record. */
    async record(purchase: NewPurchase): Promise<void> {
      await db
        .insert(creditPurchases)
        .values({ ...purchase, updatedAt: purchase.createdAt })
        .onConflictDoNothing({ target: creditPurchases.checkoutSessionId })
    },

    async findBySession(checkoutSessionId: string): Promise<CreditPurchaseRow | undefined> {
      const [row] = await db
        .select()
        .from(creditPurchases)
        .where(eq(creditPurchases.checkoutSessionId, checkoutSessionId))
        .limit(1)
      return row
    },

    async findByPaymentIntent(paymentIntentId: string): Promise<CreditPurchaseRow | undefined> {
      const [row] = await db
        .select()
        .from(creditPurchases)
        .where(eq(creditPurchases.paymentIntentId, paymentIntentId))
        .limit(1)
      return row
    },

    async update(id: number, changes: PurchaseChanges, now: Date): Promise<void> {
      await db
        .update(creditPurchases)
        .set({ ...changes, updatedAt: now })
        .where(eq(creditPurchases.id, id))
    },
  }
}
