import type { EventBus } from '../../../lib/events.ts'
import type { Metrics } from '../../../lib/metrics/metrics.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'

/** What happened to a hold: placed, settled either way, moved to another order, or refused for want of credits. */
export type HoldTransition = 'created' | 'captured' | 'released' | 'transferred' | 'refused'

const TRANSITIONS: readonly HoldTransition[] = ['created', 'captured', 'released', 'transferred', 'refused']

/**
 * Counts `credit_hold_transitions_total{transition}` (every transition's series shows from the start,
 * at 0) and, of the releases, those of the expiry sweep: `credit_hold_expirations_total`.
 */
export function countHoldTransitions(metrics: Metrics, events: EventBus<ServiceEvents>): void {
  const counter = metrics.counter({
    name: 'credit_hold_transitions_total',
    help: 'Credit hold state changes (and refusals), by transition.',
    labelNames: ['transition'],
  })
  const series = new Map(TRANSITIONS.map((transition) => [transition, counter.series({ transition })]))
  const expired = metrics
    .counter({
      name: 'credit_hold_expirations_total',
      help: 'Credit holds the expiry sweep released (HOLD_TTL_HOURS); each also counts as released in credit_hold_transitions_total.',
    })
    .series({})
  events.on('CreditHoldChanged', (e) => {
    series.get(e.transition)?.inc()
    if (e.expired) expired.inc()
  })
  events.on('CreditHoldRefused', () => series.get('refused')?.inc())
}
