/**
 * What the AI features cost, as the AI module sees it: a port the root (src/services.ts) fills with
 * the credits module's meter (src/modules/credits/feature-meter.ts), so this module imports nothing
 * of credits. Guests and the support agent are never metered.
 */

/** The catalogue's (config/billing.json) ids of the metered AI features. */
export type AiFeature = 'ai_trading_agent' | 'ai_assistant' | 'ai_analysis'

/**
 * How a charge ended: a feature_use row written (below zero if need be: a completed call was
 * delivered), nothing to charge, one already there, or the write failed (the database down).
 */
export type ChargeOutcome = 'charged' | 'free' | 'already-charged' | 'failed'

/** A feature's cost set aside for one call under way: charged when it completes, else released. */
export interface FeatureReservation {
  /** Debits the cost once, linked to the call's ai_calls row; never throws (a failure is logged). */
  charge(aiCallId: number): Promise<ChargeOutcome>
  /** Frees the cost set aside, charging nothing. Safe to call again, and after charge. */
  release(): void
}

export interface FeatureMeter {
  /**
   * Before the model is asked: a 422 on `field` when the user's spendable credits (balance - held),
   * less the costs this instance has set aside for their calls under way, do not cover the
   * feature's cost; otherwise the cost is set aside until the reservation is charged or released.
   */
  reserve(userId: number, feature: AiFeature, field: string): Promise<FeatureReservation>
  /** As reserve, setting nothing aside (for a call made later, by the outbox). */
  check(userId: number, feature: AiFeature, field: string): Promise<void>
  /** Debits the cost of a completed call once (as FeatureReservation.charge). */
  charge(use: { userId: number; feature: AiFeature; aiCallId: number }): Promise<ChargeOutcome>
}

/**
 * The meter of a server with no model configured: the offline assistant only quotes the help
 * articles, which is not the AI answer the catalogue prices, so nothing is checked or charged.
 */
export const unmetered: FeatureMeter = {
  reserve: async () => ({ charge: async () => 'free', release() {} }),
  check: async () => {},
  charge: async () => 'free',
}
