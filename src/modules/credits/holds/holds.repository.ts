import {
  and,
  asc,
  count,
  desc,
  eq,
  fillPlaceholders,
  getTableColumns,
  inArray,
  lte,
  sql,
  type WithSubquery,
} from 'drizzle-orm'
import type { Db } from '../../../db/client.ts'
import { isUniqueViolation } from '../../../db/failures.ts'
import { type CreditHoldRow, creditHolds, type HoldStatus } from '../../../db/schema/index.ts'
import { ledgerStatementParts } from '../ledger.repository.ts'

export interface NewHold {
  userId: number
  brokerParentOrderId: string
  brokerAccountHash: string | null
  creditsAmount: string
}

/** What one placeHold statement did. */
export type PlaceHoldOutcome =
  | { kind: 'created'; hold: CreditHoldRow }
  | { kind: 'existing'; hold: CreditHoldRow }
  /** Spendable credits do not cover it; balance and held as the lock saw them (none: no account). */
  | { kind: 'refused'; account: { balance: string; held: string } | null }
  /** Another request created a hold for this order after this statement's snapshot was taken. */
  | { kind: 'raced' }

/** What one settleHold statement did. */
export type SettleOutcome =
  | { kind: 'settled'; hold: CreditHoldRow }
  /** Nothing to do: the order's hold as it was (null: none). */
  | { kind: 'unchanged'; status: HoldStatus | null }
  /** The hold was held in this statement's snapshot, yet changed before the lock was taken. */
  | { kind: 'raced' }

export type SettledStatus = Exclude<HoldStatus, 'held'>

/** A held hold past its time, as the expiry sweep finds it. */
export interface ExpiredHold {
  id: number
  userId: number
}

// Any fixed number (another than the migrations' and the knowledge base sync's): the expiry sweep's
// advisory lock, so that one instance at a time sweeps.
export const EXPIRY_SWEEP_LOCK = 727_029

const HOLD_ORDER_UNIQUE = 'credit_holds_user_order_unique'
const STATEMENT_NAMES = {
  place: 'credit_hold_place',
  captured: 'credit_hold_capture',
  released: 'credit_hold_release',
}

const p = (name: string) => sql.placeholder(name)
const column = (c: { name: string }) => sql.identifier(c.name)
const holdColumns = getTableColumns(creditHolds)
type HoldFields = { [K in keyof typeof holdColumns]: unknown }
/** A CTE's columns of credit_holds as a nested selection, so drizzle maps them to a CreditHoldRow. */
const holdFieldsOf = <T extends HoldFields>(cte: T) =>
  Object.fromEntries(Object.keys(holdColumns).map((key) => [key, cte[key as keyof HoldFields]])) as {
    [K in keyof typeof holdColumns]: T[K]
  }

/**
 * The three hot statements, each one round trip (its own transaction unless run inside one),
 * prepared by name so PostgreSQL parses and plans them once per connection. Each first locks the
 * user's credit_accounts row (FOR UPDATE, the lock every credit operation takes first), then does
 * the whole change. The later parts read the statement's snapshot, taken before the lock was
 * granted: where that can be stale (a racing request committed in between), the outcome says
 * `raced` and the caller runs the statement again after taking the lock (so with a fresh snapshot).
 */
function holdStatements(db: Db) {
  const ledger = ledgerStatementParts(db)
  const { account, locked } = ledger
  const ownOrder = and(eq(creditHolds.userId, p('userId')), eq(creditHolds.brokerParentOrderId, p('orderId')))
  const amount = sql`${p('amount')}::numeric`
  const now = sql`${p('now')}::timestamptz`

  // Create: lock; the order's hold if any; else reserve the amount (if spendable covers it) and
  // insert the hold. A hold another request inserted after the snapshot fails the insert (unique).
  const existing = db.$with('existing').as(db.select().from(creditHolds).where(ownOrder))
  const reserved = ledger.reserve(amount, now, sql`not exists (select 1 from ${existing})`)
  // drizzle's insert ... select wants every column (the identity too), so this one is written out.
  const created = db.$with('created', holdColumns).as(
    sql`insert into ${creditHolds} (${column(creditHolds.userId)}, ${column(creditHolds.brokerParentOrderId)},
      ${column(creditHolds.brokerAccountHash)}, ${column(creditHolds.creditsAmount)}, ${column(creditHolds.status)},
      ${column(creditHolds.createdAt)}, ${column(creditHolds.updatedAt)})
      select ${reserved.userId}, ${p('orderId')}, ${p('accountHash')}, ${amount}, 'held', ${now}, ${now}
      from ${reserved} returning *`,
  )
  const place = db
    .with(account, existing, reserved, created)
    .select({
      balance: account.balance,
      held: account.held,
      created: holdFieldsOf(created),
      existing: holdFieldsOf(existing),
    })
    .from(account)
    .leftJoin(created, sql`true`)
    .leftJoin(existing, sql`true`)
    .prepare(STATEMENT_NAMES.place)

  // Capture or release: lock; held -> status; give back the held amount (and, for a capture,
  // take it off the balance and append the debit with the new balance_after).
  const settle = (status: SettledStatus) => {
    const seen = db
      .$with('seen')
      .as(db.select({ status: creditHolds.status }).from(creditHolds).where(ownOrder))
    const settled = db.$with('settled').as(
      db
        .update(creditHolds)
        .set(
          status === 'captured'
            ? { status, capturedAt: now, updatedAt: now }
            : { status, releasedAt: now, updatedAt: now },
        )
        .where(and(ownOrder, eq(creditHolds.status, 'held'), locked))
        .returning(),
    )
    const moved = ledger.settle(settled, status === 'captured', now)
    const ctes: WithSubquery[] = [account, seen, settled, moved]
    if (status === 'captured') ctes.push(ledger.captureDebit(settled, moved, now))
    return db
      .with(...ctes)
      .select({ status: seen.status, settled: holdFieldsOf(settled) })
      .from(seen)
      .leftJoin(settled, sql`true`)
      .prepare(STATEMENT_NAMES[status])
  }

  return { place, capture: settle('captured'), release: settle('released') }
}

export interface PlaceHoldValues {
  userId: number
  orderId: string
  accountHash: string | null
  amount: string
  now: Date
}
export interface SettleHoldValues {
  userId: number
  orderId: string
  now: Date
}

/**
 * The hold statements as PostgreSQL gets them (name, text, and the values for given inputs), for a
 * benchmark to run them on a bare pg pool: the database's own limit for these transactions.
 */
export function holdStatementsSql(db: Db) {
  const statements = holdStatements(db)
  const of = <V extends object>(name: string, query: { getQuery(): { sql: string; params: unknown[] } }) => {
    const { sql: text, params } = query.getQuery()
    return {
      name,
      text,
      values: (values: V): unknown[] => fillPlaceholders(params, { ...values } as Record<string, unknown>),
    }
  }
  return {
    place: of<PlaceHoldValues>(STATEMENT_NAMES.place, statements.place),
    capture: of<SettleHoldValues>(STATEMENT_NAMES.captured, statements.capture),
    release: of<SettleHoldValues>(STATEMENT_NAMES.released, statements.release),
  }
}

/** Every query on credit_holds, always through the owner's id; takes a db or a transaction. */
export function createHoldsRepository({ db }: { db: Db }) {
  const owned = (userId: number, orderId: string) =>
    and(eq(creditHolds.userId, userId), eq(creditHolds.brokerParentOrderId, orderId))
  let statements: ReturnType<typeof holdStatements> | undefined
  const prepared = () => {
    statements ??= holdStatements(db)
    return statements
  }

  return {
    async findByOrder(userId: number, orderId: string): Promise<CreditHoldRow | undefined> {
      const [row] = await db.select().from(creditHolds).where(owned(userId, orderId)).limit(1)
      return row
    },

    /** The user's holds on any of these orders. */
    async findByOrders(userId: number, orderIds: string[]): Promise<CreditHoldRow[]> {
      if (orderIds.length === 0) return []
      return db
        .select()
        .from(creditHolds)
        .where(and(eq(creditHolds.userId, userId), inArray(creditHolds.brokerParentOrderId, orderIds)))
    },

    /** Inserts a held hold (its credits already added to the account's held total by the caller). */
    async insertHeld(hold: NewHold, now: Date): Promise<CreditHoldRow> {
      const [row] = await db
        .insert(creditHolds)
        .values({ ...hold, status: 'held', createdAt: now, updatedAt: now })
        .returning()
      if (!row) throw new Error('credit_holds insert returned no row')
      return row
    },

    /**
     * In one statement: the order's hold if it has one, else a new held hold whose amount moves to
     * the account's held total, when the spendable credits (balance - held) cover it.
     */
    async placeHold(hold: NewHold, now: Date): Promise<PlaceHoldOutcome> {
      let rows: Awaited<ReturnType<ReturnType<typeof holdStatements>['place']['execute']>>
      try {
        const values: PlaceHoldValues = {
          userId: hold.userId,
          orderId: hold.brokerParentOrderId,
          accountHash: hold.brokerAccountHash,
          amount: hold.creditsAmount,
          now,
        }
        rows = await prepared().place.execute({ ...values })
      } catch (error) {
        // A clash on (user_id, broker_parent_order_id): another request inserted the order's hold first.
        if (isUniqueViolation(error, HOLD_ORDER_UNIQUE)) return { kind: 'raced' }
        throw error
      }
      const [row] = rows
      if (row?.existing) return { kind: 'existing', hold: row.existing }
      if (row?.created) return { kind: 'created', hold: row.created }
      return { kind: 'refused', account: row ? { balance: row.balance, held: row.held } : null }
    },

    /**
     * In one statement: the order's held hold becomes `status`, its amount leaves the held total,
     * and a capture takes it off the balance with one `hold_capture` ledger row.
     */
    async settleHold(
      userId: number,
      orderId: string,
      status: SettledStatus,
      now: Date,
    ): Promise<SettleOutcome> {
      const statement = status === 'captured' ? prepared().capture : prepared().release
      const values: SettleHoldValues = { userId, orderId, now }
      const [row] = await statement.execute({ ...values })
      if (row?.settled) return { kind: 'settled', hold: row.settled }
      if (row?.status === 'held') return { kind: 'raced' }
      return { kind: 'unchanged', status: row?.status ?? null }
    },

    /**
     * Takes the expiry sweep's advisory lock for the rest of the transaction (db must be one), unless
     * another transaction has it: false then, at once.
     */
    async tryLockExpirySweep(): Promise<boolean> {
      const result = await db.execute(sql`select pg_try_advisory_xact_lock(${EXPIRY_SWEEP_LOCK}) as locked`)
      // Both drivers (node-postgres and PGlite) answer { rows }; Db's result type is theirs in common.
      const [row] = (result as unknown as { rows: { locked: boolean }[] }).rows
      return row?.locked === true
    },

    /** Up to `limit` holds still held that were created at `cutoff` or before, oldest first (a partial index covers it). */
    async expiredHeld(cutoff: Date, limit: number): Promise<ExpiredHold[]> {
      return db
        .select({ id: creditHolds.id, userId: creditHolds.userId })
        .from(creditHolds)
        .where(and(eq(creditHolds.status, 'held'), lte(creditHolds.createdAt, cutoff)))
        .orderBy(asc(creditHolds.createdAt), asc(creditHolds.id))
        .limit(limit)
    },

    /** The order a hold is on now, if it is still held (read under the user's account lock). */
    async heldOrderOf(id: number): Promise<string | undefined> {
      const [row] = await db
        .select({ orderId: creditHolds.brokerParentOrderId })
        .from(creditHolds)
        .where(and(eq(creditHolds.id, id), eq(creditHolds.status, 'held')))
      return row?.orderId
    },

    /** Re-points a hold at another parent order, remembering the one it came from. */
    async moveToOrder(id: number, from: string, to: string, now: Date): Promise<CreditHoldRow> {
      const [row] = await db
        .update(creditHolds)
        .set({ brokerParentOrderId: to, transferredFrom: from, updatedAt: now })
        .where(eq(creditHolds.id, id))
        .returning()
      if (!row) throw new Error(`credit hold ${id} vanished under the account lock`)
      return row
    },

    async countForUser(userId: number): Promise<number> {
      const [row] = await db.select({ n: count() }).from(creditHolds).where(eq(creditHolds.userId, userId))
      return row?.n ?? 0
    },

    /** One page of the user's holds, newest first. */
    async pageForUser(userId: number, limit: number, offset: number): Promise<CreditHoldRow[]> {
      return db
        .select()
        .from(creditHolds)
        .where(eq(creditHolds.userId, userId))
        .orderBy(desc(creditHolds.id))
        .limit(limit)
        .offset(offset)
    },
  }
}

export type HoldsRepository = ReturnType<typeof createHoldsRepository>
