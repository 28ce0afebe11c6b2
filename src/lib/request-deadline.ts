import { AsyncLocalStorage } from 'node:async_hooks'
import type { ServerResponse } from 'node:http'

/** A request under way, as the deadline sees it. */
export interface RequestTiming {
  readonly startedAtMs: number
  readonly deadlineMs: number
  readonly response: ServerResponse
}

const running = new AsyncLocalStorage<RequestTiming>()

/** A request's timing, from its arrival: `performance.now()` and nothing else per request. */
export function requestTiming(response: ServerResponse, deadlineMs: number): RequestTiming {
  return { startedAtMs: performance.now(), deadlineMs, response }
}

/**
 * Runs `next` (what is left of the request) so that `requestGivenUp()` can tell, from anywhere it
 * calls, when the request is no longer worth finishing. Entered again where a request's work
 * resumes from an event of its socket (after the body is read), which does not carry it along.
 */
export function runWithin(timing: RequestTiming, next: () => void): void {
  running.run(timing, next)
}

/**
 * Why the current request was given up: its client left before the answer began, or it has worked
 * past its deadline without answering. Undefined when it was not, or outside a request.
 */
export function requestGivenUp(): 'client gone' | 'deadline passed' | undefined {
  const request = running.getStore()
  // Once its answer has begun (an event stream), a request is finished however long it runs.
  if (!request || request.response.headersSent) return undefined
  if (request.response.destroyed || request.response.socket?.destroyed) return 'client gone'
  if (performance.now() - request.startedAtMs > request.deadlineMs) return 'deadline passed'
  return undefined
}
