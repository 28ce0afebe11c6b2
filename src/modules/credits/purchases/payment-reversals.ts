import type Stripe from 'stripe'
import type { Db } from '../../../db/client.ts'
import type { CreditPurchaseRow } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import { creditUnitsToString, toCreditUnits } from '../../../lib/decimal.ts'
import type { LedgerService } from '../ledger.service.ts'
import { proportionalCredits } from './proportional-credits.ts'
import { createPurchasesRepository } from './purchases.repository.ts'
import type { StripeEvent } from './stripe.client.ts'
import type { PurchaseLog, WebhookOutcome } from './webhook-outcomes.ts'

// A dispute Stripe closes in the seller's favour: won, or an inquiry closed without a chargeback.
const RETURNED = new Set(['won', 'warning_closed'])

/**
 * Refunds and disputes of a paid purchase, as ledger rows of their own kinds linked to the purchase:
 * a refund takes back the credits in proportion to the amount refunded in all (so a replayed or
 * late delivery takes nothing twice); a dispute withholds the disputed share when it opens, gives
 * back what it still withholds when won, and keeps it when lost. A refund while a dispute is open
 * takes first the credits nobody took back yet, then those the dispute withholds (moved from the
 * dispute to the refund), so a won dispute gives back only what the refund did not take. The
 * credits go back whatever is left: when they were already spent, the balance goes below zero. Runs
 * inside the webhook's transaction, the buyer's account locked and the event recorded as handled.
 */
export function createPaymentReversals({ clock, ledger }: { clock: Clock; ledger: LedgerService }) {
  /** What is still the buyer's to lose: the credits neither refunded nor withheld for a dispute. */
  const unreversed = (purchase: CreditPurchaseRow) =>
    toCreditUnits(purchase.credits) -
    toCreditUnits(purchase.creditsRefunded) -
    toCreditUnits(purchase.creditsDisputed)

  const clamp = (units: bigint, limit: bigint) => (units < 0n ? 0n : units < limit ? units : limit)

  async function refund(tx: Db, purchase: CreditPurchaseRow, charge: Stripe.Charge): Promise<WebhookOutcome> {
    const refunded = Math.min(charge.amount_refunded, purchase.amount)
    if (refunded <= purchase.amountRefunded) return 'duplicate'
    const total = proportionalCredits(purchase.credits, refunded, purchase.amount)
    const due = toCreditUnits(total) - toCreditUnits(purchase.creditsRefunded)
    const fromBalance = clamp(due, unreversed(purchase))
    const withheld = toCreditUnits(purchase.creditsDisputed)
    const fromDispute = purchase.disputeStatus === 'open' ? clamp(due - fromBalance, withheld) : 0n
    const reference = charge.refunds?.data?.[0]?.id ?? charge.id
    if (fromDispute > 0n) {
      // Withheld already: the dispute lets go of them and the refund takes them, net nothing now.
      await ledger.append(tx, {
        userId: purchase.userId,
        amount: creditUnitsToString(fromDispute),
        kind: 'dispute_returned',
        reference: purchase.disputeId ?? reference,
        reason: `Refunded while disputed: refund ${reference} takes these withheld credits`,
        purchaseId: purchase.id,
      })
    }
    const taken = fromBalance + fromDispute
    if (taken > 0n) {
      await ledger.append(tx, {
        userId: purchase.userId,
        amount: `-${creditUnitsToString(taken)}`,
        kind: 'refund',
        reference,
        reason: `Stripe refund of ${refunded} of ${purchase.amount} ${purchase.currency} paid`,
        purchaseId: purchase.id,
      })
    }
    await createPurchasesRepository({ db: tx }).update(
      purchase.id,
      {
        amountRefunded: refunded,
        creditsRefunded: creditUnitsToString(toCreditUnits(purchase.creditsRefunded) + taken),
        creditsDisputed: creditUnitsToString(withheld - fromDispute),
      },
      clock.now(),
    )
    return 'refunded'
  }

  async function withhold(
    tx: Db,
    purchase: CreditPurchaseRow,
    dispute: Stripe.Dispute,
    closedAs: 'open' | 'lost',
  ) {
    const share = proportionalCredits(purchase.credits, dispute.amount, purchase.amount)
    const withheld = creditUnitsToString(clamp(toCreditUnits(share), unreversed(purchase)))
    if (withheld !== '0') {
      await ledger.append(tx, {
        userId: purchase.userId,
        amount: `-${withheld}`,
        kind: 'dispute_withheld',
        reference: dispute.id,
        reason: `Stripe dispute (${dispute.reason}) of ${dispute.amount} ${dispute.currency}`,
        purchaseId: purchase.id,
      })
    }
    await createPurchasesRepository({ db: tx }).update(
      purchase.id,
      { disputeId: dispute.id, disputeStatus: closedAs, creditsDisputed: withheld },
      clock.now(),
    )
  }

  async function disputeCreated(tx: Db, purchase: CreditPurchaseRow, dispute: Stripe.Dispute) {
    // One dispute per charge: seen already (or its close came first, out of order).
    if (purchase.disputeStatus !== null) return 'duplicate'
    await withhold(tx, purchase, dispute, 'open')
    return 'dispute_withheld'
  }

  async function disputeClosed(tx: Db, purchase: CreditPurchaseRow, dispute: Stripe.Dispute) {
    const won = RETURNED.has(dispute.status)
    if (!won && dispute.status !== 'lost') return 'ignored'
    if (purchase.disputeStatus === 'won' || purchase.disputeStatus === 'lost') return 'duplicate'
    const purchases = createPurchasesRepository({ db: tx })
    if (purchase.disputeStatus === null) {
      // The close arrived without its opening: a lost dispute takes its share now, a won one nothing.
      if (!won) await withhold(tx, purchase, dispute, 'lost')
      else await purchases.update(purchase.id, { disputeId: dispute.id, disputeStatus: 'won' }, clock.now())
      return won ? 'dispute_won' : 'dispute_lost'
    }
    // What the dispute still withholds: a refund meanwhile may have taken part of it.
    if (won && toCreditUnits(purchase.creditsDisputed) > 0n) {
      await ledger.append(tx, {
        userId: purchase.userId,
        amount: purchase.creditsDisputed,
        kind: 'dispute_returned',
        reference: dispute.id,
        reason: `Stripe dispute ${dispute.status === 'won' ? 'won' : 'closed without a chargeback'}`,
        purchaseId: purchase.id,
      })
    }
    await purchases.update(
      purchase.id,
      won ? { disputeStatus: 'won', creditsDisputed: '0' } : { disputeStatus: 'lost' },
      clock.now(),
    )
    return won ? 'dispute_won' : 'dispute_lost'
  }

  return {
    /** Applies a `charge.refunded`, `charge.dispute.created` or `charge.dispute.closed` event. */
    async apply(
      tx: Db,
      purchase: CreditPurchaseRow,
      event: StripeEvent,
      log: PurchaseLog,
    ): Promise<WebhookOutcome> {
      const object = event.data.object as Stripe.Charge | Stripe.Dispute
      if (object.currency.toLowerCase() !== purchase.currency.toLowerCase()) {
        log.error(
          { event_id: event.id, type: event.type, currency: object.currency, expected: purchase.currency },
          'payment reversal in another currency: nothing taken back',
        )
        return 'amount_mismatch'
      }
      switch (event.type) {
        case 'charge.refunded':
          return refund(tx, purchase, object as Stripe.Charge)
        case 'charge.dispute.created':
          return disputeCreated(tx, purchase, object as Stripe.Dispute)
        case 'charge.dispute.closed':
          return disputeClosed(tx, purchase, object as Stripe.Dispute)
        default:
          return 'ignored'
      }
    },
  }
}
