import { AsyncLocalStorage } from 'node:async_hooks'
import type { ServerResponse } from 'node:http'

interface RunningRequest {
  readonly startedAtMs: number
  readonly deadlineMs: number
  readonly response: ServerResponse
}

const running = new AsyncLocalStorage<RunningRequest>()

/**
 * Runs a request's handler (`next`) so that `requestGivenUp()` can tell, from anywhere it calls, when
 * the request is no longer worth finishing: its client left before the answer began, or it has
 * worked past `deadlineMs` without answering. Nothing is timed per request: both are read when asked.
 */
export function runWithinDeadline(response: ServerResponse, deadlineMs: number, next: () => void): void {
  running.run({ startedAtMs: performance.now(), deadlineMs, response }, next)
}

/** Why the current request was given up, or undefined (not given up, or not within a request). */
export function requestGivenUp(): 'client gone' | 'deadline passed' | undefined {
  const request = running.getStore()
  // Once its answer has begun (an event stream), a request is finished however long it runs.
  if (!request || request.response.headersSent) return undefined
  if (request.response.destroyed || request.response.socket?.destroyed) return 'client gone'
  if (performance.now() - request.startedAtMs > request.deadlineMs) return 'deadline passed'
  return undefined
}
