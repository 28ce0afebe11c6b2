import { collectDefaultMetrics, Registry } from 'prom-client'

// One per process, however many apps it builds (tests build many).
let processRegistry: Registry | undefined

/**
 * prom-client's default series (event-loop lag, GC, heap, CPU, handles): facts about the process,
 * not about one app, so they are collected once per process. prom-client returns no handle to stop
 * the event-loop monitor and GC observer it starts, so a set per app would pile up in a test process
 * that builds hundreds of apps. Both are unref'd, so they never keep a process alive.
 */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry })
  }
  return processRegistry
}
