import type { Metrics } from '../../../lib/metrics/metrics.ts'

/** What happened to a hold: placed, settled either way, moved to another order, or refused for want of credits. */
export type HoldTransition = 'created' | 'captured' | 'released' | 'transferred' | 'refused'

const TRANSITIONS: readonly HoldTransition[] = ['created', 'captured', 'released', 'transferred', 'refused']

/** Counts `credit_hold_transitions_total{transition}`; every transition's series shows from the start, at 0. */
export function holdTransitionCounter(metrics: Metrics): (transition: HoldTransition) => void {
  const counter = metrics.counter({
    name: 'credit_hold_transitions_total',
    help: 'Credit hold state changes (and refusals), by transition.',
    labelNames: ['transition'],
  })
  const series = new Map(TRANSITIONS.map((transition) => [transition, counter.series({ transition })]))
  return (transition) => series.get(transition)?.inc()
}
