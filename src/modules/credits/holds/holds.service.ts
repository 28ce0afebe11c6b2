import type { Db } from '../../../db/client.ts'
import type { CreditHoldRow, HoldStatus } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { creditUnitsToNumber, toCreditString, toCreditUnits } from '../../../lib/decimal.ts'
import { HttpError, ValidationError } from '../../../lib/errors.ts'
import type { EventBus } from '../../../lib/events.ts'
import { type LengthAwarePage, paginate } from '../../../lib/laravel.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'
import { DEFAULT_PER_PAGE, type PageQuery } from '../credits.schemas.ts'
import { createLedgerRepository } from '../ledger.repository.ts'
import { insufficientCredits, type LedgerService } from '../ledger.service.ts'
import { presentHold } from './holds.presenters.ts'
import {
  createHoldsRepository,
  type HoldsRepository,
  type NewHold,
  type SettledStatus,
} from './holds.repository.ts'
import type { CreateHoldBody, HoldResponse, TransferHoldBody } from './holds.schemas.ts'

export interface HoldsDeps {
  db: Db
  clock: Clock
  ledger: LedgerService
  /** HOLD_DEFAULT_CREDITS: the amount of a hold whose request names none. */
  holdDefault: string
  /** Hears of every hold that changed, once it is committed, and of each refusal. */
  events: EventBus<ServiceEvents>
  /** HOLD_TTL_HOURS: a hold still held this long after its creation is released by expireHeld (0: never). */
  holdTtlHours: number
}

// The expiry sweep releases this many holds per transaction, the oldest first: the users' account
// rows it locked stay locked until the commit, so a batch is kept short (milliseconds of statements).
const EXPIRY_BATCH = 100
// Batches of one sweep at most, so that a backlog never keeps a shutdown waiting: the next sweep goes on.
const EXPIRY_BATCHES_PER_SWEEP = 50

const tooPrecise = () =>
  ValidationError.withMessages({
    credits_amount: ['The credits amount field must have 0-4 decimal places.'],
  })

// Cannot happen while the account row is locked; if it ever does, fail the request whole.
const holdMovedUnderLock = () => new Error('credit hold changed under the account lock')

const targetTaken = () => new HttpError(409, 'Another hold already uses the target parent order.')

/**
 * Credit holds for automated parent orders: held, then captured (one ledger debit) or released.
 * Every operation locks the user's credit account first, so requests racing on one user (on any
 * number of instances) run one at a time, and every one of them is idempotent per
 * (user, broker_parent_order_id). Create, capture and release are each one SQL statement (one round
 * trip); only when a racing request changed the order in between (see holdStatements) does one run
 * again inside a transaction that took the lock first.
 */
export function createHoldsService({ db, clock, ledger, holdDefault, events, holdTtlHours }: HoldsDeps) {
  const repo = createHoldsRepository({ db })

  /**
   * One hold statement, in the user's queue; when it reports that a racing request changed the order
   * after its snapshot, once more inside a transaction that took the account lock first, so that it
   * sees the winner's work.
   */
  async function oneStatement<O extends { kind: string }>(
    userId: number,
    run: (holds: HoldsRepository) => Promise<O>,
  ): Promise<O> {
    const outcome = await ledger.serialized(userId, () => run(repo))
    if (outcome.kind !== 'raced') return outcome
    return ledger.withLockedAccount(userId, (tx) => run(createHoldsRepository({ db: tx })))
  }

  /** Settles the order's held hold as `status`, announcing it once committed. */
  async function settle(userId: number, orderId: string, status: SettledStatus): Promise<HoldStatus | null> {
    const outcome = await oneStatement(userId, (holds) =>
      holds.settleHold(userId, orderId, status, clock.now()),
    )
    if (outcome.kind === 'raced') throw holdMovedUnderLock()
    if (outcome.kind === 'unchanged') return outcome.status
    events.emit('CreditHoldChanged', { userId, hold: outcome.hold, transition: status })
    return status
  }

  /**
   * Releases one batch of holds held since `cutoff` or before, in one transaction holding the expiry
   * sweep's advisory lock (null: another instance holds it, so sweeps now). Each goes through the
   * route's release statement, so the ledger and held total change exactly as for a request; the
   * events are emitted once committed. A hold a request captured, released or moved meanwhile is
   * read again under its user's account lock: skipped, or released on the order it is on now.
   */
  async function expireBatch(cutoff: Date, now: Date) {
    const released: CreditHoldRow[] = []
    const found = await db.transaction(async (tx) => {
      const holds = createHoldsRepository({ db: tx })
      if (!(await holds.tryLockExpirySweep())) return null
      const batch = await holds.expiredHeld(cutoff, EXPIRY_BATCH)
      const accounts = createLedgerRepository({ db: tx })
      // Requests lock one account each; the sweep locks many, always in user id order.
      const users = [...new Set(batch.map((hold) => hold.userId))].sort((a, b) => a - b)
      for (const userId of users) {
        await accounts.lockAccount(userId)
        for (const { id } of batch.filter((hold) => hold.userId === userId)) {
          const orderId = await holds.heldOrderOf(id)
          if (orderId === undefined) continue
          const outcome = await holds.settleHold(userId, orderId, 'released', now)
          if (outcome.kind !== 'settled') throw holdMovedUnderLock()
          released.push(outcome.hold)
        }
      }
      return batch.length
    })
    for (const hold of released) {
      events.emit('CreditHoldChanged', { userId: hold.userId, hold, transition: 'released', expired: true })
    }
    return found === null ? null : { found, released: released.length }
  }

  return {
    /**
     * The expiry sweep: releases every hold held for HOLD_TTL_HOURS or longer, oldest first, in
     * batches; only one instance at a time (the others find the lock taken and return 0). Returns how
     * many it released.
     */
    async expireHeld(): Promise<number> {
      if (holdTtlHours <= 0) return 0
      const now = clock.now()
      const cutoff = new Date(now.getTime() - holdTtlHours * 3_600_000)
      let total = 0
      for (let i = 0; i < EXPIRY_BATCHES_PER_SWEEP; i++) {
        const batch = await expireBatch(cutoff, now)
        if (batch === null) break
        total += batch.released
        if (batch.found < EXPIRY_BATCH) break
      }
      return total
    },

    /**
     * Reserves credits for an order: a new hold (created: true), or the order's existing hold of
     * any status, unchanged (created: false). 422 on credits_amount when spendable credits fall short.
     */
    async create(userId: number, input: CreateHoldBody): Promise<{ hold: HoldResponse; created: boolean }> {
      const amount = input.credits_amount === undefined ? holdDefault : toCreditString(input.credits_amount)
      if (amount === null) throw tooPrecise()
      const hold = {
        userId,
        brokerParentOrderId: input.broker_parent_order_id,
        brokerAccountHash: input.broker_account_hash ?? null,
        creditsAmount: amount,
      }
      const outcome = await oneStatement(userId, (holds) => holds.placeHold(hold, clock.now()))
      switch (outcome.kind) {
        case 'created':
          events.emit('CreditHoldChanged', { userId, hold: outcome.hold, transition: 'created' })
          return { hold: presentHold(outcome.hold), created: true }
        case 'existing':
          return { hold: presentHold(outcome.hold), created: false }
        case 'refused': {
          events.emit('CreditHoldRefused', { userId })
          const { balance = '0', held = '0' } = outcome.account ?? {}
          throw insufficientCredits(
            'credits_amount',
            creditUnitsToNumber(toCreditUnits(balance) - toCreditUnits(held)),
          )
        }
        default:
          throw holdMovedUnderLock()
      }
    },

    /** The user's holds on any of these orders, as tx (or the service's db) sees them. */
    onOrders: (tx: Db, userId: number, orderIds: string[]): Promise<CreditHoldRow[]> =>
      createHoldsRepository({ db: tx }).findByOrders(userId, orderIds),

    /**
     * A held hold brought across from the Laravel original, inside tx with the user's account locked
     * (ledger.withLockedAccount) and no hold on the order (the caller looked, under that lock): its
     * credits move into held when the spendable credits cover them; undefined, changing nothing, when
     * they do not. It counts as created now, so it expires HOLD_TTL_HOURS after the import. No event:
     * nothing the user runs is connected to this service for it yet.
     */
    async placeImported(tx: Db, hold: NewHold): Promise<CreditHoldRow | undefined> {
      const now = clock.now()
      const held = await createLedgerRepository({ db: tx }).addToHeld(hold.userId, hold.creditsAmount, now)
      if (held === undefined) return undefined
      return createHoldsRepository({ db: tx }).insertHeld(hold, now)
    },

    /** held -> captured with one `hold_capture` debit; true again once captured; false if released or unknown. */
    async capture(userId: number, orderId: string): Promise<boolean> {
      return (await settle(userId, orderId, 'captured')) === 'captured'
    },

    /** held -> released, freeing its credits; true again once released; false if captured or unknown. */
    async release(userId: number, orderId: string): Promise<boolean> {
      return (await settle(userId, orderId, 'released')) === 'released'
    },

    /**
     * Moves the held hold of one order to another: true, and true again for a repeat; false when
     * nothing is held on `from`; 409 when `to` already has a hold.
     */
    async transfer(userId: number, input: TransferHoldBody): Promise<boolean> {
      const { from_broker_parent_order_id: from, to_broker_parent_order_id: to } = input
      if (from === to) {
        throw ValidationError.withMessages({
          to_broker_parent_order_id: [
            'The to broker parent order id field and from broker parent order id must be different.',
          ],
        })
      }
      let moved: CreditHoldRow | undefined
      const transferred = await ledger.withLockedAccount(userId, async (tx) => {
        const holds = createHoldsRepository({ db: tx })
        const source = await holds.findByOrder(userId, from)
        const target = await holds.findByOrder(userId, to)
        if (source?.status === 'held') {
          if (target) throw targetTaken()
          moved = await holds.moveToOrder(source.id, from, to, clock.now())
          return true
        }
        // The same transfer again (a retry): the hold is already on `to`, having come from `from`.
        return target?.transferredFrom === from
      })
      if (moved) events.emit('CreditHoldChanged', { userId, hold: moved, transition: 'transferred' })
      return transferred
    },

    /** The user's holds, newest first, as Laravel's paginator JSON. */
    async list(userId: number, query: PageQuery, path: string): Promise<LengthAwarePage<HoldResponse>> {
      const perPage = query.per_page ?? DEFAULT_PER_PAGE
      const page = query.page ?? 1
      const [total, rows] = await Promise.all([
        repo.countForUser(userId),
        repo.pageForUser(userId, perPage, (page - 1) * perPage),
      ])
      return paginate({
        data: rows.map(presentHold),
        total,
        page,
        perPage,
        path,
        requestedPerPage: query.per_page,
      })
    },
  }
}

export type HoldsService = ReturnType<typeof createHoldsService>
