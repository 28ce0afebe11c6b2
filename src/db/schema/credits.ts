import { sql } from 'drizzle-orm'
import {
  bigint,
  check,
  index,
  jsonb,
  numeric,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  varchar,
} from 'drizzle-orm/pg-core'
import { aiCalls } from './ai.ts'
import { users } from './users.ts'

// Credits are exact decimals; numeric reads back as a string, presenters turn it into a JSON number.
const credits = (name: string) => numeric(name, { precision: 20, scale: 4 })
const at = (name: string) => timestamp(name, { withTimezone: true, precision: 6 })

/**
 * One row per user: the row every credit operation locks (SELECT ... FOR UPDATE), and the running
 * totals kept in step with the ledger and the holds inside that same transaction, so the database
 * itself refuses a state where held credits exceed the balance.
 */
export const creditAccounts = pgTable(
  'credit_accounts',
  {
    // No foreign key to users, here or in the other money tables: money records outlive the
    // account. A deleted user's balance, ledger, holds and purchases stay, by id alone, detached
    // from the personal data that went with the user.
    userId: bigint('user_id', { mode: 'number' }).primaryKey(),
    balance: credits('balance').notNull().default('0'),
    held: credits('held').notNull().default('0'),
    currentPackageId: varchar('current_package_id', { length: 64 }),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  // No check on balance - held: a refund or a dispute can take back credits already spent or held
  // (ledger.service's append keeps every other debit within the spendable credits).
  (t) => [check('credit_accounts_held_non_negative', sql`${t.held} >= 0`)],
)

/**
 * Debits written whatever is left, so the balance may go below zero: the reversals take back paid
 * credits, and an AI answer already delivered is paid for (docs/credits.md).
 */
export const BELOW_ZERO_DEBIT_KINDS = ['refund', 'dispute_withheld', 'feature_use'] as const

export const PURCHASE_STATUSES = ['pending', 'paid', 'rejected'] as const
export type PurchaseStatus = (typeof PURCHASE_STATUSES)[number]
export const DISPUTE_STATUSES = ['open', 'won', 'lost'] as const
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number]

/**
 * One Stripe Checkout purchase: recorded when the checkout starts (what was offered, at what
 * price), paid when the webhook says so and the amount matches, then refunded or disputed in part
 * or whole. The ledger rows it causes point back here (credit_transactions.purchase_id).
 */
export const creditPurchases = pgTable(
  'credit_purchases',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    userId: bigint('user_id', { mode: 'number' }).notNull(),
    checkoutSessionId: varchar('checkout_session_id', { length: 255 }).notNull(),
    paymentIntentId: varchar('payment_intent_id', { length: 255 }),
    packageId: varchar('package_id', { length: 64 }).notNull(),
    credits: credits('credits').notNull(),
    /** The price in the currency's minor unit (cents), as Stripe counts it. */
    amount: bigint('amount', { mode: 'number' }).notNull(),
    currency: varchar('currency', { length: 3 }).notNull(),
    status: varchar('status', { length: 16 }).$type<PurchaseStatus>().notNull().default('pending'),
    amountRefunded: bigint('amount_refunded', { mode: 'number' }).notNull().default(0),
    creditsRefunded: credits('credits_refunded').notNull().default('0'),
    disputeId: varchar('dispute_id', { length: 255 }),
    disputeStatus: varchar('dispute_status', { length: 16 }).$type<DisputeStatus>(),
    creditsDisputed: credits('credits_disputed').notNull().default('0'),
    paidAt: at('paid_at'),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('credit_purchases_checkout_session_unique').on(t.checkoutSessionId),
    uniqueIndex('credit_purchases_payment_intent_unique').on(t.paymentIntentId),
    index('credit_purchases_user_id_id_index').on(t.userId, t.id),
    check('credit_purchases_status_valid', sql`${t.status} in ('pending', 'paid', 'rejected')`),
    check(
      'credit_purchases_dispute_status_valid',
      sql`${t.disputeStatus} is null or ${t.disputeStatus} in ('open', 'won', 'lost')`,
    ),
    check('credit_purchases_amount_positive', sql`${t.amount} > 0`),
  ],
)

/** The append-only ledger: the balance is its sum; `balance_after` chains each row to the one before. */
export const creditTransactions = pgTable(
  'credit_transactions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    userId: bigint('user_id', { mode: 'number' }).notNull(),
    amount: credits('amount').notNull(),
    kind: varchar('kind', { length: 32 }).notNull(),
    reference: varchar('reference', { length: 191 }),
    reason: text('reason'),
    balanceAfter: credits('balance_after').notNull(),
    adminId: bigint('admin_id', { mode: 'number' }).references(() => users.id, { onDelete: 'set null' }),
    /** The purchase a `purchase`, `refund`, `dispute_withheld` or `dispute_returned` row belongs to. */
    purchaseId: bigint('purchase_id', { mode: 'number' }).references(() => creditPurchases.id, {
      onDelete: 'set null',
    }),
    /** The hold a `hold_capture` row settled. */
    holdId: bigint('hold_id', { mode: 'number' }).references(() => creditHolds.id, { onDelete: 'set null' }),
    /** The AI answer a `feature_use` row paid for. */
    aiCallId: bigint('ai_call_id', { mode: 'number' }).references(() => aiCalls.id, { onDelete: 'set null' }),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    index('credit_transactions_user_id_id_index').on(t.userId, t.id),
    index('credit_transactions_created_at_index').on(t.createdAt, t.id),
    check('credit_transactions_amount_non_zero', sql`${t.amount} <> 0`),
    // Only a reversal, the capture of a hold placed before it, and an AI answer already delivered
    // (docs/credits.md) may leave the balance below zero;
    // a credit may leave it below zero too, when it only pays back part of what a reversal took.
    check(
      'credit_transactions_balance_after_non_negative',
      sql`${t.balanceAfter} >= 0 or ${t.amount} > 0 or ${t.kind} in ('refund', 'dispute_withheld', 'hold_capture', 'feature_use')`,
    ),
    // An AI answer is paid for once.
    uniqueIndex('credit_transactions_ai_call_unique').on(t.aiCallId).where(sql`${t.kind} = 'feature_use'`),
    // A checkout session is credited once, however often the payment provider retries.
    uniqueIndex('credit_transactions_purchase_reference_unique')
      .on(t.reference)
      .where(sql`${t.kind} = 'purchase'`),
    // One opening balance per user, whichever import file names them (docs/credits.md).
    uniqueIndex('credit_transactions_opening_balance_unique')
      .on(t.userId)
      .where(sql`${t.kind} = 'opening_balance'`),
  ],
)

export const HOLD_STATUSES = ['held', 'captured', 'released'] as const
export type HoldStatus = (typeof HOLD_STATUSES)[number]

/** Credits reserved for an automated parent order at the broker: held, then captured or released. */
export const creditHolds = pgTable(
  'credit_holds',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    userId: bigint('user_id', { mode: 'number' }).notNull(),
    brokerParentOrderId: varchar('broker_parent_order_id', { length: 191 }).notNull(),
    brokerAccountHash: varchar('broker_account_hash', { length: 191 }),
    creditsAmount: credits('credits_amount').notNull(),
    status: varchar('status', { length: 16 }).$type<HoldStatus>().notNull().default('held'),
    transferredFrom: varchar('transferred_from', { length: 191 }),
    capturedAt: at('captured_at'),
    releasedAt: at('released_at'),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('credit_holds_user_order_unique').on(t.userId, t.brokerParentOrderId),
    index('credit_holds_user_id_id_index').on(t.userId, t.id),
    check('credit_holds_status_valid', sql`${t.status} in ('held', 'captured', 'released')`),
    check('credit_holds_amount_positive', sql`${t.creditsAmount} > 0`),
    // The expiry sweep's search: the oldest held holds first.
    index('credit_holds_held_created_at_index').on(t.createdAt).where(sql`${t.status} = 'held'`),
  ],
)

/**
 * Refund and dispute events that came before the payment they reverse was credited (the provider
 * does not promise the order of its events): kept as received, and applied in the transaction that
 * credits the payment, so the result does not depend on the order of arrival.
 */
export const deferredPaymentEvents = pgTable(
  'deferred_payment_events',
  {
    /** The provider's event id. */
    id: varchar('id', { length: 255 }).primaryKey(),
    type: varchar('type', { length: 128 }).notNull(),
    paymentIntentId: varchar('payment_intent_id', { length: 255 }).notNull(),
    /** The verified event, as the provider sent it. */
    event: jsonb('event').notNull(),
    /** When the provider made the event: deferred events apply in this order. */
    eventCreatedAt: at('event_created_at').notNull(),
    createdAt: at('created_at').notNull(),
  },
  (t) => [index('deferred_payment_events_payment_intent_index').on(t.paymentIntentId, t.eventCreatedAt)],
)

/** Payment-provider events already handled: a retried delivery of one event id does nothing. */
export const paymentEvents = pgTable('payment_events', {
  id: varchar('id', { length: 255 }).primaryKey(),
  type: varchar('type', { length: 128 }).notNull(),
  checkoutSessionId: varchar('checkout_session_id', { length: 255 }),
  createdAt: at('created_at').notNull(),
})

export type CreditAccountRow = typeof creditAccounts.$inferSelect
export type CreditTransactionRow = typeof creditTransactions.$inferSelect
export type CreditHoldRow = typeof creditHolds.$inferSelect
export type CreditPurchaseRow = typeof creditPurchases.$inferSelect
export type DeferredPaymentEventRow = typeof deferredPaymentEvents.$inferSelect
