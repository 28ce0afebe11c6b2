import type { Clock } from '../clock.ts'
import { type UpstreamClient, UpstreamError, upstreamFaultOf } from './client.ts'

export interface CircuitBreakerOptions {
  /** Consecutive faults (time-outs, refused connections, 5xx) that open the circuit. */
  failureThreshold: number
  /** How long it stays open before one probe call is let through (half-open). */
  coolDownMs: number
  clock: Clock
  /** A call failed for the upstream's own reason (not while open: those calls never left). */
  onFault(error: unknown): void
  /** A call got an answer (a 4xx too: the upstream is there to give it). */
  onAnswer(): void
}

type State = { name: 'closed'; faults: number } | { name: 'open'; untilMs: number } | { name: 'half-open' }

const circuitOpen = () =>
  new UpstreamError('circuit-open', 'Upstream service is unavailable', { code: 'CIRCUIT_OPEN' })

/**
 * The client behind a circuit breaker: after `failureThreshold` faults in a row, calls fail at once
 * (UpstreamError `circuit-open`) for `coolDownMs` instead of each waiting UPSTREAM_TIMEOUT_MS; then
 * one probe goes through (the others still fail at once), and its answer closes the circuit again
 * while its fault opens it for another cool-down. Open means the last call found the upstream down,
 * as `onFault` has told dependency health.
 */
export function withCircuitBreaker(client: UpstreamClient, options: CircuitBreakerOptions): UpstreamClient {
  const { failureThreshold, coolDownMs, clock } = options
  let state: State = { name: 'closed', faults: 0 }

  const answered = () => {
    state = { name: 'closed', faults: 0 }
    options.onAnswer()
  }
  const faulted = (error: unknown, probe: boolean) => {
    options.onFault(error)
    const faults = state.name === 'closed' ? state.faults + 1 : failureThreshold
    state =
      probe || faults >= failureThreshold
        ? { name: 'open', untilMs: clock.nowMs() + coolDownMs }
        : { name: 'closed', faults }
  }

  return {
    async request(req) {
      let probe = false
      if (state.name === 'half-open') throw circuitOpen()
      if (state.name === 'open') {
        if (clock.nowMs() < state.untilMs) throw circuitOpen()
        state = { name: 'half-open' }
        probe = true
      }
      try {
        const res = await client.request(req)
        answered()
        return res
      } catch (error) {
        if (upstreamFaultOf(error) === undefined) answered()
        else faulted(error, probe)
        throw error
      }
    },
    close: () => client.close(),
  }
}
