import { isUniqueViolation } from '../../db/failures.ts'
import { negateCredits, toCreditString, toCreditUnits } from '../../lib/decimal.ts'
import { ValidationError } from '../../lib/errors.ts'
import type { BillingCatalog } from './billing.catalog.ts'
import type { LedgerService } from './ledger.service.ts'

type Outcome = 'charged' | 'free' | 'already-charged' | 'failed'

/**
 * Meters the features of the catalogue (config/billing.json) that AI calls use: a check before the
 * model is asked, and one `feature_use` ledger row (reference = the feature id, ai_call_id = the
 * call) when the call completed. A cost of 0 or a feature not in the catalogue is free: no row.
 *
 * While a call is under way its cost is set aside in this instance's memory, so a user cannot start
 * more calls at once than their credits pay for here. A completed call was delivered, so it is paid
 * whatever is left when it ends (a hold, or a call on another instance, may have taken the credits
 * meanwhile): the balance may go below zero, and no paid feature or hold starts again until a
 * purchase covers it. Only a failed write (the database down) leaves it unpaid, and is logged.
 */
export function createFeatureMeter(deps: {
  ledger: LedgerService
  catalog: BillingCatalog
  log: { warn(obj: object, msg: string): void }
}) {
  const { ledger, catalog, log } = deps
  /** Per user, the 1/10000 credits set aside for calls under way on this instance. */
  const reserved = new Map<number, bigint>()

  const costOf = (featureId: string) => {
    const feature = catalog.findFeature(featureId)
    const cost = feature ? toCreditString(feature.credit_cost) : null
    return feature && cost && toCreditUnits(cost) > 0n ? { feature, cost, units: toCreditUnits(cost) } : null
  }

  async function charge(use: { userId: number; feature: string; aiCallId: number }): Promise<Outcome> {
    const priced = costOf(use.feature)
    if (!priced) return 'free'
    try {
      await ledger.withLockedAccount(use.userId, (tx) =>
        ledger.append(tx, {
          userId: use.userId,
          amount: negateCredits(priced.cost),
          kind: 'feature_use',
          reference: priced.feature.id,
          aiCallId: use.aiCallId,
          reason: priced.feature.name,
        }),
      )
      return 'charged'
    } catch (error) {
      // The unique index on (ai_call_id) of feature_use rows: this call is already paid for.
      if (isUniqueViolation(error, 'credit_transactions_ai_call_unique')) return 'already-charged'
      log.warn({ ...use, cost: priced.cost, failure: String(error) }, 'AI feature not charged')
      return 'failed'
    }
  }

  async function reserve(userId: number, featureId: string, field: string) {
    const priced = costOf(featureId)
    if (!priced) return { charge: async () => 'free' as const, release() {} }
    const { credits_available_for_automation: spendable } = await ledger.summary(userId)
    // Read the reservations after the await: within this process, checks for one user never interleave.
    const held = reserved.get(userId) ?? 0n
    const left = toCreditUnits(toCreditString(spendable) ?? '0') - held
    if (left < priced.units) {
      throw ValidationError.withMessages({
        [field]: [
          `Insufficient credits: ${priced.feature.name} costs ${priced.cost} credit${priced.cost === '1' ? '' : 's'}, ${spendable} spendable.`,
        ],
      })
    }
    reserved.set(userId, held + priced.units)
    let open = true
    const release = () => {
      if (!open) return
      open = false
      const rest = (reserved.get(userId) ?? 0n) - priced.units
      if (rest > 0n) reserved.set(userId, rest)
      else reserved.delete(userId)
    }
    return {
      async charge(aiCallId: number): Promise<Outcome> {
        try {
          return await charge({ userId, feature: featureId, aiCallId })
        } finally {
          release()
        }
      },
      release,
    }
  }

  return {
    reserve,
    async check(userId: number, featureId: string, field: string): Promise<void> {
      ;(await reserve(userId, featureId, field)).release()
    },
    charge,
  }
}

export type FeatureMeterService = ReturnType<typeof createFeatureMeter>
