/** What the service reports about what it did; the caller logs it (no Fastify types here). */
export interface PurchaseLog {
  info(details: Record<string, unknown>, message: string): void
  error(details: Record<string, unknown>, message: string): void
}

/** What one webhook delivery did; counted by `payment_webhook_events_total{outcome}`. */
export const WEBHOOK_OUTCOMES = [
  'credited',
  'amount_mismatch',
  'refunded',
  'dispute_withheld',
  'dispute_won',
  'dispute_lost',
  'duplicate',
  'unknown_payment',
  'deferred',
  'ignored',
] as const
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number]

declare module '../../../plugins/events.ts' {
  interface InternalEvents {
    /** A payment-provider webhook delivery was handled (signature good); `outcome` says what it did. */
    PaymentWebhookHandled: { type: string; outcome: WebhookOutcome }
  }
}
