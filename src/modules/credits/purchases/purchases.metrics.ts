import type { EventBus } from '../../../lib/events.ts'
import type { Metrics } from '../../../lib/metrics/metrics.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'
import { WEBHOOK_OUTCOMES } from './webhook-outcomes.ts'

/**
 * Counts `payment_webhook_events_total{outcome}`; every outcome's series shows from the start, at 0,
 * so an alert on `amount_mismatch` or `unknown_payment` needs no series to appear first.
 */
export function countPaymentWebhooks(metrics: Metrics, events: EventBus<ServiceEvents>): void {
  const counter = metrics.counter({
    name: 'payment_webhook_events_total',
    help: 'Payment-provider webhook deliveries handled, by outcome (amount_mismatch: paid, not credited).',
    labelNames: ['outcome'],
  })
  const series = new Map(WEBHOOK_OUTCOMES.map((outcome) => [outcome, counter.series({ outcome })]))
  events.on('PaymentWebhookHandled', (e) => series.get(e.outcome)?.inc())
}
