import { describeFailure } from './errors.ts'

/** The services this one depends on, each watched on its own. */
export type Dependency = 'database' | 'redis' | 'upstream'

export interface DependencyState {
  up: boolean
  /** When it last went down or came back (ISO 8601). */
  since: string
  /** What the failure that took it down said (a message and code, never a secret). */
  error?: string
}

/**
 * Whether each dependency answers, as its uses find out: a use that failed for the dependency's own
 * reason (a lost connection, a time-out) reports `failed`, a use that worked `succeeded`. Only a
 * change is acted on: one log line when a dependency goes down and one when it comes back (never
 * one per request), and `onChange` for whoever follows it.
 */
export interface DependencyHealth {
  failed(dependency: Dependency, error: unknown): void
  succeeded(dependency: Dependency): void
  isUp(dependency: Dependency): boolean
  /** The dependencies this instance uses, with their state (the readiness check's body). */
  states(): Partial<Record<Dependency, DependencyState>>
  /** Called after each change of a dependency's state; answers a function that stops it. */
  onChange(listener: (dependency: Dependency, up: boolean) => void): () => void
  /**
   * While `dependency` is down, calls `ping` every `everyMs` until one resolves, which marks it up:
   * its return is noticed (and logged) without waiting for a use. Answers a function that stops it.
   */
  probeWhileDown(dependency: Dependency, ping: () => Promise<unknown>, everyMs: number): () => void
}

interface HealthLog {
  error(details: object, message: string): void
  info(details: object, message: string): void
}

/**
 * What the failure said, safe to log: the innermost cause's code and message (a Drizzle query error's
 * own message carries the statement and its parameters), credentials masked, bounded.
 */
function failureText(error: unknown): string {
  let innermost = error
  for (
    let depth = 0;
    innermost instanceof Error && innermost.cause instanceof Error && depth < 5;
    depth += 1
  ) {
    innermost = innermost.cause
  }
  return describeFailure(innermost).slice(0, 200)
}

export function createDependencyHealth(
  used: readonly Dependency[],
  log: HealthLog,
  nowMs: () => number = Date.now,
): DependencyHealth {
  const states = new Map<Dependency, { up: boolean; sinceMs: number; error?: string }>(
    used.map((dependency) => [dependency, { up: true, sinceMs: nowMs() }]),
  )
  const listeners = new Set<(dependency: Dependency, up: boolean) => void>()
  const change = (dependency: Dependency, up: boolean) => {
    for (const listener of listeners) listener(dependency, up)
  }
  return {
    failed(dependency, error) {
      const state = states.get(dependency)
      if (!state?.up) return
      state.up = false
      state.sinceMs = nowMs()
      state.error = failureText(error)
      log.error({ dependency, error: state.error }, `${dependency} unavailable`)
      change(dependency, false)
    },
    succeeded(dependency) {
      const state = states.get(dependency)
      if (!state || state.up) return
      const downMs = nowMs() - state.sinceMs
      state.up = true
      state.sinceMs = nowMs()
      state.error = undefined
      log.info({ dependency, downMs }, `${dependency} available again`)
      change(dependency, true)
    },
    isUp: (dependency) => states.get(dependency)?.up ?? true,
    states() {
      const out: Partial<Record<Dependency, DependencyState>> = {}
      for (const [dependency, { up, sinceMs, error }] of states) {
        out[dependency] = { up, since: new Date(sinceMs).toISOString(), ...(error ? { error } : {}) }
      }
      return out
    },
    onChange(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
    probeWhileDown(dependency, ping, everyMs) {
      let probe: NodeJS.Timeout | undefined
      const stopProbing = () => {
        clearInterval(probe)
        probe = undefined
      }
      const stopFollowing = this.onChange((changed, up) => {
        if (changed !== dependency) return
        stopProbing()
        if (up) return
        probe = setInterval(() => {
          ping().then(
            () => this.succeeded(dependency),
            () => {},
          )
        }, everyMs)
        probe.unref()
      })
      return () => {
        stopFollowing()
        stopProbing()
      }
    },
  }
}
