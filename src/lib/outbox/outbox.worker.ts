import type { Db } from '../../db/client.ts'
import type { Clock } from '../clock.ts'
import { describeFailure } from '../errors.ts'
import { createOutboxRepository } from './outbox.repository.ts'

/** Which try this is: `last` is the final one, after which a failure is given up on. */
export interface OutboxAttempt {
  number: number
  last: boolean
  /**
   * Aborts when this instance stops while the try is still under way: a handler that takes long
   * (a model call) gives up then, and its row goes back untouched, this try not counted, for the
   * next instance to run.
   */
  signal: AbortSignal
}

/** Delivers one row's payload; a rejection is a failed try, retried later. */
export type OutboxHandler = (payload: Record<string, unknown>, attempt: OutboxAttempt) => Promise<void>

export interface OutboxLogger {
  debug(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface OutboxWorkerOptions {
  /** Rows claimed (and delivered concurrently) per round. */
  batchSize?: number
  /** Tries before a row is given up on (`failed_at`). */
  maxAttempts?: number
  /** How long a claim keeps other instances off a row; far longer than one delivery can take. */
  leaseMs?: number
  /** First retry delay; it doubles with each try. */
  backoffBaseMs?: number
  backoffMaxMs?: number
  /** Real time between passes when nothing wakes the worker. */
  pollMs?: number
  /** At a stop, how long a try under way may still take before its `signal` aborts. */
  interruptAfterMs?: number
}

/** What one pass of this instance did. */
export interface PassStats {
  sent: number
  retried: number
  failed: number
}

const DEFAULTS = {
  batchSize: 5,
  maxAttempts: 10,
  leaseMs: 5 * 60_000,
  backoffBaseMs: 5_000,
  backoffMaxMs: 10 * 60_000,
  pollMs: 5_000,
  interruptAfterMs: 1_000,
} satisfies Required<OutboxWorkerOptions>

/**
 * The delay before try `attempts + 1`: base * 2^(attempts-1), capped, then scaled by 0.8..1.2 so rows
 * that failed together (a mail server outage) do not all come back in the same instant.
 */
export function backoffDelay(attempts: number, baseMs: number, maxMs: number, random = Math.random): number {
  const exponential = Math.min(baseMs * 2 ** Math.max(0, attempts - 1), maxMs)
  return Math.round(exponential * (0.8 + 0.4 * random()))
}

/**
 * Delivers outbox rows, at least once: a row is leased by a short claiming transaction, delivered
 * outside any transaction, then marked sent. A crash between the handler's success and the mark sends
 * it again when the lease runs out; holding the row lock across the delivery would shrink that window
 * only slightly (a crash after SMTP accepted but before COMMIT still resends) while pinning a
 * connection, and on PGlite's single connection every request, for the whole SMTP exchange.
 * Passes run one at a time per instance; other instances skip the rows it holds. Due times and
 * leases follow the injected clock, so instances' clocks must agree well within the lease (NTP does).
 */
export function createOutboxWorker(deps: {
  db: Db
  clock: Clock
  log: OutboxLogger
  options?: OutboxWorkerOptions
  /**
   * Takes a pass's failure that is an outage reported elsewhere (the database down: one line for the
   * whole outage), answering true, so that a poll every few seconds does not log it again.
   */
  reportOutage?: (error: unknown) => boolean
}) {
  const { clock, log } = deps
  const options = { ...DEFAULTS, ...deps.options }
  const repo = createOutboxRepository({ db: deps.db })
  const handlers = new Map<string, OutboxHandler>()

  let started = false
  let stopped = false
  const interrupt = new AbortController()
  let pollTimer: NodeJS.Timeout | undefined
  const wakeTimers = new Set<NodeJS.Timeout>()
  // Passes are chained so one runs at a time; `queued` is a pass asked for but not yet started,
  // which every later request shares (it will see all their rows).
  let chain: Promise<unknown> = Promise.resolve()
  let queued: Promise<PassStats> | null = null

  async function deliver(row: {
    id: number
    kind: string
    payload: Record<string, unknown>
    attempts: number
    availableAt: Date
  }) {
    const handler = handlers.get(row.kind)
    try {
      if (!handler) throw new Error(`no handler for outbox kind "${row.kind}"`)
      await handler(row.payload, {
        number: row.attempts,
        last: row.attempts >= options.maxAttempts,
        signal: interrupt.signal,
      })
    } catch (error) {
      const failure = describeFailure(error)
      const now = clock.now()
      if (interrupt.signal.aborted) {
        await repo.release(row.id, row.availableAt, now)
        log.warn(
          { outboxId: row.id, kind: row.kind, failure },
          'outbox try interrupted by the stop, row given back',
        )
        return 'released' as const
      }
      if (row.attempts >= options.maxAttempts) {
        await repo.markFailedAttempt(row.id, failure, now, null)
        log.error(
          { outboxId: row.id, kind: row.kind, attempts: row.attempts, failure },
          'outbox row given up',
        )
        return 'failed' as const
      }
      const delay = backoffDelay(row.attempts, options.backoffBaseMs, options.backoffMaxMs)
      await repo.markFailedAttempt(row.id, failure, now, new Date(now.getTime() + delay))
      log.warn(
        { outboxId: row.id, kind: row.kind, attempts: row.attempts, retryInMs: delay, failure },
        'outbox delivery failed, will retry',
      )
      return 'retried' as const
    }
    await repo.markSent(row.id, clock.now())
    log.debug({ outboxId: row.id, kind: row.kind }, 'outbox row delivered')
    return 'sent' as const
  }

  /** Claims and delivers due rows until none is left (or the worker stops). Never rejects. */
  async function runPass(): Promise<PassStats> {
    const stats: PassStats = { sent: 0, retried: 0, failed: 0 }
    try {
      while (!stopped) {
        const now = clock.now()
        const rows = await repo.claimDue(
          [...handlers.keys()],
          now,
          new Date(now.getTime() + options.leaseMs),
          options.batchSize,
        )
        const outcomes = await Promise.allSettled(rows.map(deliver))
        for (const outcome of outcomes) {
          // Marking the outcome failed (the database went away): the lease brings the row back.
          if (outcome.status === 'rejected') log.error({ err: outcome.reason }, 'outbox bookkeeping failed')
          // A row given back at a stop was neither delivered nor tried, as far as counts go.
          else if (outcome.value !== 'released') stats[outcome.value]++
        }
        if (rows.length < options.batchSize) break
      }
    } catch (err) {
      if (!deps.reportOutage?.(err)) log.error({ err }, 'outbox pass failed')
    }
    return stats
  }

  function schedulePoll() {
    clearTimeout(pollTimer)
    if (stopped || !started) return
    pollTimer = setTimeout(() => void drain(), options.pollMs)
    pollTimer.unref()
  }

  /** Runs a pass now (after the running one, if any) and answers what it did. */
  function drain(): Promise<PassStats> {
    if (stopped) return Promise.resolve({ sent: 0, retried: 0, failed: 0 })
    if (queued) return queued
    const pass = chain.then(() => {
      queued = null
      return runPass()
    })
    queued = pass
    chain = pass.finally(schedulePoll)
    return pass
  }

  return {
    /** Sets who delivers rows of `kind`; only those kinds are claimed. */
    handle(kind: string, handler: OutboxHandler) {
      handlers.set(kind, handler)
    },

    drain,

    /**
     * Something was queued in this process: a pass now. A row written in a caller's transaction
     * that has not committed yet is invisible to that pass on PostgreSQL (on PGlite the pass waits for
     * the transaction), so that case looks again shortly; polling covers a longer transaction.
     */
    notify(inTransaction: boolean) {
      if (!started || stopped) return
      void drain()
      if (!inTransaction) return
      for (const delay of [50, 1_000]) {
        const timer = setTimeout(() => {
          wakeTimers.delete(timer)
          void drain()
        }, delay)
        timer.unref()
        wakeTimers.add(timer)
      }
    },

    /** Starts delivering: a pass at once (what waited while no instance ran), then polling. */
    start() {
      if (started || stopped) return
      started = true
      void drain()
    },

    /**
     * Stops claiming, polling and waking, and waits for the pass under way: its tries may finish
     * within `interruptAfterMs`; then their signal aborts, and the rows of those that give up go back.
     */
    async stop() {
      stopped = true
      clearTimeout(pollTimer)
      for (const timer of wakeTimers) clearTimeout(timer)
      wakeTimers.clear()
      const interrupting = setTimeout(() => interrupt.abort(), options.interruptAfterMs)
      await chain.catch(() => {})
      clearTimeout(interrupting)
    },
  }
}

export type OutboxWorker = ReturnType<typeof createOutboxWorker>
