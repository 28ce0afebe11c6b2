import { eq, sql } from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { type DeferredPaymentEventRow, deferredPaymentEvents } from '../../../db/schema/index.ts'

// The first key of the two-key advisory locks on one PaymentIntent (two int4 keys never meet the
// one-int8 keys the other advisory locks use).
const PAYMENT_INTENT_LOCK = 727_037

export type NewDeferredPaymentEvent = typeof deferredPaymentEvents.$inferInsert

/** Every query on deferred_payment_events; takes a db or a transaction. */
export function createDeferredPaymentEventsRepository({ db }: { db: Db }) {
  return {
    /**
     * Locks the PaymentIntent for the rest of the transaction: a reversal that defers itself and the
     * credit that applies what was deferred take turns, so no deferred event is left behind.
     */
    async lockPaymentIntent(paymentIntentId: string): Promise<void> {
      await db.execute(
        sql`select pg_advisory_xact_lock(${PAYMENT_INTENT_LOCK}, hashtext(${paymentIntentId}))`,
      )
    },

    /** Keeps an event; false when it was kept already (a replayed delivery). */
    async defer(row: NewDeferredPaymentEvent): Promise<boolean> {
      const kept = await db
        .insert(deferredPaymentEvents)
        .values(row)
        .onConflictDoNothing({ target: deferredPaymentEvents.id })
        .returning({ id: deferredPaymentEvents.id })
      return kept.length > 0
    },

    /** Removes and answers the events kept for a PaymentIntent, oldest first. */
    async takeFor(paymentIntentId: string): Promise<DeferredPaymentEventRow[]> {
      const rows = await db
        .delete(deferredPaymentEvents)
        .where(eq(deferredPaymentEvents.paymentIntentId, paymentIntentId))
        .returning()
      return rows.sort(
        (a, b) => a.eventCreatedAt.getTime() - b.eventCreatedAt.getTime() || a.id.localeCompare(b.id),
      )
    },
  }
}
