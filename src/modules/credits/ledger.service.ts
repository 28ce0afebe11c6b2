import type { Db } from '../../db/client.ts'
import { fromDatabase, LOCK_TIMEOUT_CODE } from '../../db/failures.ts'
import {
  BELOW_ZERO_DEBIT_KINDS,
  type CreditAccountRow,
  type CreditTransactionRow,
} from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { creditNumber, creditUnitsToNumber, toCreditUnits } from '../../lib/decimal.ts'
import { ValidationError } from '../../lib/errors.ts'
import { createKeyedQueue } from '../../lib/keyed-queue.ts'
import { type LengthAwarePage, paginate } from '../../lib/laravel.ts'
import type { CreditSummary } from '../users/users.presenters.ts'
import { presentTransaction, type TransactionResponse } from './ledger.presenters.ts'
import { createLedgerRepository, type LedgerKind, type NewLedgerRow } from './ledger.repository.ts'

export type { LedgerKind } from './ledger.repository.ts'

const EXACT_AMOUNT = /^-?\d{1,16}(\.\d{1,4})?$/

/** The 422 for a debit or a hold the spendable credits (balance - held) do not cover. */
export function insufficientCredits(field: string, spendable: number): ValidationError {
  const message =
    spendable < 0
      ? `Insufficient credits: ${spendable} spendable, below zero after a refund, a payment dispute or a paid AI answer.`
      : `Insufficient credits: ${spendable} spendable.`
  return ValidationError.withMessages({ [field]: [message] })
}

export interface HistoryOptions {
  /** The page size the request asked for, kept in the page links (paginate's `requestedPerPage`). */
  requestedPerPage?: number
}

/**
 * The credits ledger: an append-only list of signed amounts per user, with the running balance and
 * held totals on the user's credit_accounts row. Every change locks that row first (inside
 * withLockedAccount, or as the first step of one statement, as the hold statements do), so
 * concurrent changes for one user run one after the other, on one instance or many.
 */
export function createLedgerService({
  db,
  clock,
  queueWaitMs,
}: {
  db: Db
  clock: Clock
  /** The longest an operation waits behind the user's earlier ones (the lock time-out, as the row lock waits). */
  queueWaitMs?: number
}) {
  const repo = createLedgerRepository({ db })
  // A burst of one user's requests waits here, one at a time, instead of each taking a pooled
  // connection only to wait on the account row lock, which would starve every other user of
  // connections. One queue per service, so per app instance (the service is built once); the row
  // lock still orders requests across instances. Waiting here is waiting for that lock, so it is
  // bounded as the lock wait is: past it, the same 503 as a lock time-out, not a pile of requests.
  const queue = createKeyedQueue({
    maxWaitMs: queueWaitMs,
    waitedTooLong: () =>
      fromDatabase(
        Object.assign(
          new Error("waited past the lock time-out behind the user's earlier credit operations"),
          {
            code: LOCK_TIMEOUT_CODE,
          },
        ),
      ),
  })

  return {
    /**
     * Runs fn after this instance's earlier operations on the user's credits are done (no
     * transaction, no lock: fn's own statement must lock the account row, as the hold statements do).
     */
    serialized<T>(userId: number, fn: () => Promise<T>): Promise<T> {
      return queue.run(userId, fn)
    },

    /**
     * Runs fn in one transaction holding the user's credit_accounts row locked (created on first use).
     * Never nest it for one user: the inner call would wait for the outer one forever.
     */
    withLockedAccount<T>(userId: number, fn: (tx: Db, account: CreditAccountRow) => Promise<T>): Promise<T> {
      return queue.run(userId, () =>
        db.transaction(async (tx) => {
          const locked = createLedgerRepository({ db: tx })
          let account = await locked.lockAccount(userId)
          if (!account) {
            await locked.ensureAccount(userId, clock.now())
            account = await locked.lockAccount(userId)
          }
          if (!account) throw new Error(`credit account for user ${userId} could not be created`)
          return fn(tx, account)
        }),
      )
    },

    /** The user's credit account as tx (or the service's db) sees it; none before their first credit operation. */
    account: (tx: Db, userId: number): Promise<CreditAccountRow | undefined> =>
      createLedgerRepository({ db: tx }).findAccount(userId),

    /** The user's first ledger row of `kind`, as tx sees it (an opening balance: their only one). */
    firstOfKind: (tx: Db, userId: number, kind: LedgerKind): Promise<CreditTransactionRow | undefined> =>
      createLedgerRepository({ db: tx }).firstOfKind(userId, kind),

    /** Sets the user's current package, inside tx (the account locked by withLockedAccount). */
    setCurrentPackage: (tx: Db, userId: number, packageId: string) =>
      createLedgerRepository({ db: tx }).setCurrentPackage(userId, packageId, clock.now()),

    /**
     * Appends a ledger row inside tx (the account must be locked by withLockedAccount): updates the
     * running balance, sets balance_after; a debit that would take spendable (balance - held) below
     * zero throws ValidationError on `field` (default 'amount'), except the kinds of
     * BELOW_ZERO_DEBIT_KINDS (a reversal, a delivered AI answer), written whatever is left.
     */
    async append(tx: Db, entry: NewLedgerRow, field = 'amount'): Promise<CreditTransactionRow> {
      if (!EXACT_AMOUNT.test(entry.amount) || Number(entry.amount) === 0) {
        throw ValidationError.withMessages({
          [field]: [
            `The ${field.replaceAll('_', ' ')} field must be a non-zero number with at most 4 decimals.`,
          ],
        })
      }
      const locked = createLedgerRepository({ db: tx })
      const now = clock.now()
      const anyBalance = (BELOW_ZERO_DEBIT_KINDS as readonly string[]).includes(entry.kind)
      const balanceAfter = await locked.addToBalance(entry.userId, entry.amount, now, anyBalance)
      if (balanceAfter === undefined) {
        const account = await locked.findAccount(entry.userId)
        if (!account) throw new Error('append outside withLockedAccount: the account does not exist')
        throw insufficientCredits(field, spendableOf(account))
      }
      return locked.insertTransaction({ ...entry, balanceAfter, createdAt: now })
    },

    /** {available_credits, held_credits, credits_available_for_automation} as numbers. */
    async summary(userId: number): Promise<CreditSummary> {
      const account = await repo.findAccount(userId)
      const balance = creditNumber(account?.balance)
      const held = creditNumber(account?.held)
      return {
        available_credits: balance,
        held_credits: held,
        credits_available_for_automation: account ? spendableOf(account) : 0,
      }
    },

    /** The user's ledger, newest first, as a Laravel paginator page. */
    async history(
      userId: number,
      page: number,
      perPage: number,
      pageUrl: string,
      options: HistoryOptions = {},
    ): Promise<LengthAwarePage<TransactionResponse>> {
      const [total, rows] = await Promise.all([
        repo.countTransactions(userId),
        repo.pageTransactions(userId, perPage, (page - 1) * perPage),
      ])
      return paginate({ data: rows.map(presentTransaction), total, page, perPage, path: pageUrl, ...options })
    },
  }
}

export type LedgerService = ReturnType<typeof createLedgerService>

// balance - held in exact 1/10000 units, so 0.3 - 0.1 answers 0.2 and not 0.19999999999999998.
const spendableOf = (account: CreditAccountRow) =>
  creditUnitsToNumber(toCreditUnits(account.balance) - toCreditUnits(account.held))
