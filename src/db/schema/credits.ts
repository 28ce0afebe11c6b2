import { sql } from 'drizzle-orm'
import {
  bigint,
  check,
  index,
  numeric,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  varchar,
} from 'drizzle-orm/pg-core'
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
    userId: bigint('user_id', { mode: 'number' })
      .primaryKey()
      .references(() => users.id, { onDelete: 'cascade' }),
    balance: credits('balance').notNull().default('0'),
    held: credits('held').notNull().default('0'),
    currentPackageId: varchar('current_package_id', { length: 64 }),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    check('credit_accounts_held_non_negative', sql`${t.held} >= 0`),
    check('credit_accounts_spendable_non_negative', sql`${t.balance} - ${t.held} >= 0`),
  ],
)

/** The append-only ledger: the balance is its sum; `balance_after` chains each row to the one before. */
export const creditTransactions = pgTable(
  'credit_transactions',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    amount: credits('amount').notNull(),
    kind: varchar('kind', { length: 32 }).notNull(),
    reference: varchar('reference', { length: 191 }),
    reason: text('reason'),
    balanceAfter: credits('balance_after').notNull(),
    adminId: bigint('admin_id', { mode: 'number' }).references(() => users.id, { onDelete: 'set null' }),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    index('credit_transactions_user_id_id_index').on(t.userId, t.id),
    check('credit_transactions_amount_non_zero', sql`${t.amount} <> 0`),
    check('credit_transactions_balance_after_non_negative', sql`${t.balanceAfter} >= 0`),
    // A checkout session is credited once, however often the payment provider retries.
    uniqueIndex('credit_transactions_purchase_reference_unique')
      .on(t.reference)
      .where(sql`${t.kind} = 'purchase'`),
  ],
)

export const HOLD_STATUSES = ['held', 'captured', 'released'] as const
export type HoldStatus = (typeof HOLD_STATUSES)[number]

/** Credits reserved for an automated parent order at the broker: held, then captured or released. */
export const creditHolds = pgTable(
  'credit_holds',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    userId: bigint('user_id', { mode: 'number' })
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
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
  ],
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
