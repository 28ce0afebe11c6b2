import type { Db } from '../../../db/client.ts'
import type { CreditHoldRow } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { creditUnitsToNumber, negateCredits, toCreditString, toCreditUnits } from '../../../lib/decimal.ts'
import { HttpError, ValidationError } from '../../../lib/errors.ts'
import { type LengthAwarePage, paginate } from '../../../lib/laravel.ts'
import { DEFAULT_PER_PAGE, type PageQuery } from '../credits.schemas.ts'
import { insufficientCredits, type LedgerService } from '../ledger.service.ts'
import { presentHold } from './holds.presenters.ts'
import { createHoldsRepository } from './holds.repository.ts'
import type { CreateHoldBody, HoldResponse, TransferHoldBody } from './holds.schemas.ts'

export interface HoldsDeps {
  db: Db
  clock: Clock
  ledger: LedgerService
  /** HOLD_DEFAULT_CREDITS: the amount of a hold whose request names none. */
  holdDefault: string
  /** Told of every hold that changed (created, captured, released, transferred), once it is committed. */
  onChange?: (userId: number, hold: CreditHoldRow) => void
}

const tooPrecise = () =>
  ValidationError.withMessages({
    credits_amount: ['The credits amount field must have 0-4 decimal places.'],
  })

// Cannot happen while the account row is locked; if it ever does, fail the transaction whole.
const holdMovedUnderLock = () => new Error('credit hold changed under the account lock')

const targetTaken = () => new HttpError(409, 'Another hold already uses the target parent order.')

/**
 * Credit holds for automated parent orders: held, then captured (one ledger debit) or released.
 * Each operation is one transaction holding the user's credit account locked, so requests racing
 * on one user (on any number of instances) run one at a time, and every one of them is idempotent
 * per (user, broker_parent_order_id).
 */
export function createHoldsService({ db, clock, ledger, holdDefault, onChange }: HoldsDeps) {
  const repo = createHoldsRepository({ db })

  /** Tells `onChange` of the order's hold as it now is, when `changed`; answers `changed`. */
  async function announce(userId: number, orderId: string, changed: boolean): Promise<boolean> {
    if (!changed || !onChange) return changed
    const hold = await repo.findByOrder(userId, orderId)
    if (hold) onChange(userId, hold)
    return changed
  }

  return {
    /**
     * Reserves credits for an order: a new hold (created: true), or the order's existing hold of
     * any status, unchanged (created: false). 422 on credits_amount when spendable credits fall short.
     */
    async create(userId: number, input: CreateHoldBody): Promise<{ hold: CreditHoldRow; created: boolean }> {
      const amount = input.credits_amount === undefined ? holdDefault : toCreditString(input.credits_amount)
      if (amount === null) throw tooPrecise()
      const result = await ledger.withLockedAccount(userId, async (tx, account) => {
        const holds = createHoldsRepository({ db: tx })
        const existing = await holds.findByOrder(userId, input.broker_parent_order_id)
        if (existing) return { hold: existing, created: false }
        if (!(await ledger.reserve(tx, userId, amount))) {
          throw insufficientCredits(
            'credits_amount',
            creditUnitsToNumber(toCreditUnits(account.balance) - toCreditUnits(account.held)),
          )
        }
        const hold = await holds.insert(
          {
            userId,
            brokerParentOrderId: input.broker_parent_order_id,
            brokerAccountHash: input.broker_account_hash ?? null,
            creditsAmount: amount,
          },
          clock.now(),
        )
        return { hold, created: true }
      })
      if (result.created) onChange?.(userId, result.hold)
      return result
    },

    /** held -> captured with one `hold_capture` debit; true again once captured; false if released or unknown. */
    async capture(userId: number, orderId: string): Promise<boolean> {
      let changed = false
      const captured = await ledger.withLockedAccount(userId, async (tx) => {
        const holds = createHoldsRepository({ db: tx })
        const hold = await holds.findByOrder(userId, orderId)
        if (!hold || hold.status === 'released') return false
        if (hold.status === 'captured') return true
        changed = true
        if (!(await holds.settle(hold.id, 'captured', clock.now()))) throw holdMovedUnderLock()
        // Held first, then the balance: the debit is covered by the credits the hold reserved.
        await ledger.unreserve(tx, userId, hold.creditsAmount)
        await ledger.append(
          tx,
          { userId, amount: negateCredits(hold.creditsAmount), kind: 'hold_capture', reference: orderId },
          'broker_parent_order_id',
        )
        return true
      })
      await announce(userId, orderId, changed)
      return captured
    },

    /** held -> released, freeing its credits; true again once released; false if captured or unknown. */
    async release(userId: number, orderId: string): Promise<boolean> {
      let changed = false
      const released = await ledger.withLockedAccount(userId, async (tx) => {
        const holds = createHoldsRepository({ db: tx })
        const hold = await holds.findByOrder(userId, orderId)
        if (!hold || hold.status === 'captured') return false
        if (hold.status === 'released') return true
        if (!(await holds.settle(hold.id, 'released', clock.now()))) throw holdMovedUnderLock()
        await ledger.unreserve(tx, userId, hold.creditsAmount)
        changed = true
        return true
      })
      await announce(userId, orderId, changed)
      return released
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
      let changed = false
      const transferred = await ledger.withLockedAccount(userId, async (tx) => {
        const holds = createHoldsRepository({ db: tx })
        const source = await holds.findByOrder(userId, from)
        const target = await holds.findByOrder(userId, to)
        if (source?.status === 'held') {
          if (target) throw targetTaken()
          await holds.moveToOrder(source.id, from, to, clock.now())
          changed = true
          return true
        }
        // The same transfer again (a retry): the hold is already on `to`, having come from `from`.
        return target?.transferredFrom === from
      })
      await announce(userId, to, changed)
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
      // A chosen page size is kept in the page links, so following them keeps the same pages.
      const keep: Record<string, number> = query.per_page === undefined ? {} : { per_page: query.per_page }
      return paginate({ data: rows.map(presentHold), total, page, perPage, path, query: keep })
    },
  }
}
