import { sql } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'

/** One invariant of the credits ledger and how many rows break it (0 when it holds). */
export interface LedgerCheck {
  check: string
  problems: number
}

export interface LedgerAudit {
  checks: LedgerCheck[]
  /** The checks that found problems; empty when the ledger is consistent. */
  failed: LedgerCheck[]
  /** `hold_capture` ledger rows in all (a benchmark compares them with the captures it was answered). */
  holdCaptureDebits: number
}

// Each check counts the rows that break one invariant, over every user. For tests and benchmarks
// after a storm of concurrent requests; on a large ledger this reads whole tables.
const CHECKS = sql`
  select 'balance_after breaks the chain' as check, count(*)::int as problems from (
    select balance_after, sum(amount) over (partition by user_id order by id) as running from credit_transactions
  ) chain where balance_after <> running
  union all
  select 'account balance differs from the ledger sum', count(*)::int from credit_accounts a
    where a.balance <> (select coalesce(sum(amount), 0) from credit_transactions t where t.user_id = a.user_id)
  union all
  select 'account held differs from the held holds', count(*)::int from credit_accounts a
    where a.held <> (select coalesce(sum(credits_amount), 0) from credit_holds h where h.user_id = a.user_id and h.status = 'held')
  union all
  select 'account held negative, or above the balance without a reversal or an answer paid', count(*)::int from credit_accounts a
    where a.held < 0 or (a.held > a.balance and not exists (
      select 1 from credit_transactions t where t.user_id = a.user_id and t.kind in ('refund', 'dispute_withheld', 'feature_use')))
  union all
  select 'debits below zero other than reversals and answers paid', count(*)::int from credit_transactions
    where balance_after < 0 and amount < 0 and kind not in ('refund', 'dispute_withheld', 'hold_capture', 'feature_use')
  union all
  select 'paid purchases without exactly one purchase credit of their credits', count(*)::int from credit_purchases p
    where p.status = 'paid' and (select count(*) from credit_transactions t
      where t.purchase_id = p.id and t.kind = 'purchase' and t.amount = p.credits) <> 1
  union all
  select 'refund rows differ from the purchase''s refunded credits', count(*)::int from credit_purchases p
    where p.credits_refunded <> (select coalesce(-sum(amount), 0) from credit_transactions t
      where t.purchase_id = p.id and t.kind = 'refund')
  union all
  select 'dispute rows differ from the purchase''s dispute', count(*)::int from credit_purchases p
    where (p.dispute_status = 'won' or p.dispute_status is null) and p.credits_disputed <> 0
    or p.credits_disputed <> (select coalesce(-sum(amount), 0) from credit_transactions t
      where t.purchase_id = p.id and t.kind in ('dispute_withheld', 'dispute_returned'))
  union all
  select 'more taken back than a purchase credited', count(*)::int from credit_purchases p
    where p.credits_refunded + p.credits_disputed > p.credits
  union all
  select 'reversals without a purchase', count(*)::int from credit_transactions
    where kind in ('refund', 'dispute_withheld', 'dispute_returned') and purchase_id is null
  union all
  select 'captures without exactly one debit', count(*)::int from credit_holds h
    where h.status = 'captured'
    and (select count(*) from credit_transactions t
         where t.user_id = h.user_id and t.kind = 'hold_capture' and t.reference = h.broker_parent_order_id) <> 1
  union all
  select 'debits without a captured hold of that amount', count(*)::int from credit_transactions t
    where t.kind = 'hold_capture' and not exists (
      select 1 from credit_holds h where h.user_id = t.user_id and h.broker_parent_order_id = t.reference
        and h.status = 'captured' and t.amount = -h.credits_amount)
  union all
  select 'hold_capture debits', count(*)::int from credit_transactions where kind = 'hold_capture'
`

/**
 * Checks the credits invariants over the whole database: every balance_after continues its user's
 * chain, each account's balance is its ledger's sum and its held total the sum of its held holds
 * (above the balance only after a refund, a dispute or a delivered AI answer took credits), only
 * those (and the capture of a hold placed before) leave a balance below zero, every paid purchase
 * has its one credit and its refund and dispute rows add up to what the purchase records (a won
 * dispute withholding nothing), and every captured hold has exactly one `hold_capture` debit of its
 * amount and every such debit its captured hold.
 */
export async function auditLedger(db: Db): Promise<LedgerAudit> {
  const rows = await db
    .select({ check: sql<string>`audit.check`, problems: sql<number>`audit.problems`.mapWith(Number) })
    .from(sql`(${CHECKS}) as audit`)
  const debits = rows.find((row) => row.check === 'hold_capture debits')?.problems ?? 0
  const checks = rows.filter((row) => row.check !== 'hold_capture debits')
  return { checks, failed: checks.filter((row) => row.problems !== 0), holdCaptureDebits: debits }
}
