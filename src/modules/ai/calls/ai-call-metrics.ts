import type { EventBus } from '../../../lib/events.ts'
import type { Metrics } from '../../../lib/metrics/metrics.ts'
import type { ServiceEvents } from '../../../plugins/events.ts'

/**
 * `ai_calls_total{agent, status}` and `ai_tokens_total{agent, direction}`, from the events the call
 * recorder emits as each call ends (`agent` is the call's source: one of the agents, or `analysis`).
 */
export function countAiCalls(metrics: Metrics, events: EventBus<ServiceEvents>): void {
  const calls = metrics.counter({
    name: 'ai_calls_total',
    help: 'AI model calls ended, by agent and status (completed, failed, aborted).',
    labelNames: ['agent', 'status'],
  })
  const tokens = metrics.counter({
    name: 'ai_tokens_total',
    help: "Model tokens of completed calls, by agent and direction (input: the prompt's, output: the answer's).",
    labelNames: ['agent', 'direction'],
  })
  events.on('AiCallCompleted', ({ agent, inputTokens, outputTokens }) => {
    calls.series({ agent, status: 'completed' }).inc()
    tokens.series({ agent, direction: 'input' }).inc(inputTokens)
    tokens.series({ agent, direction: 'output' }).inc(outputTokens)
  })
  events.on('AiCallFailed', ({ agent, status }) => calls.series({ agent, status }).inc())
}
