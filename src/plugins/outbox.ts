import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from '../db/client.ts'
import { databaseFailureOf } from '../db/failures.ts'
import { createOutboxRepository } from '../lib/outbox/outbox.repository.ts'
import {
  createOutboxWorker,
  type OutboxHandler,
  type OutboxWorker,
  type OutboxWorkerOptions,
  type PassStats,
} from '../lib/outbox/outbox.worker.ts'
import { createPeriodicTask } from '../lib/periodic.ts'

export interface Outbox {
  /**
   * Writes a row of `kind` through `tx` (or the app's database): when the caller passes its
   * transaction, the row exists if and only if that transaction commits. The worker delivers it.
   */
  enqueue(kind: string, payload: Record<string, unknown>, tx?: Db): Promise<void>
  /**
   * Sets who delivers rows of `kind` (the mailer does "mail"). With `lane` options the kind gets a
   * worker of its own, so slow work (a model call) never holds up the mail, and its own retry policy.
   */
  handle(kind: string, handler: OutboxHandler, lane?: OutboxWorkerOptions): void
  /** Delivers what is due now (every lane) and answers what this instance did; polling does the same. */
  drain(): Promise<PassStats>
}

declare module 'fastify' {
  interface FastifyInstance {
    outbox: Outbox
  }
}

/** How often delivered rows past OUTBOX_RETENTION_DAYS are deleted (and once when the app is ready). */
export const OUTBOX_PRUNE_EVERY_MS = 60 * 60_000

/**
 * `app.outbox`: durable side effects (mail, chat analyses), delivered by workers that start with the
 * app. Rows delivered more than `retentionDays` ago are deleted in the background.
 */
async function outboxPlugin(
  app: FastifyInstance,
  { options, retentionDays = 14 }: { options?: OutboxWorkerOptions; retentionDays?: number } = {},
) {
  const log = app.log.child({ component: 'outbox' })
  const reportOutage = (error: unknown) => {
    if (databaseFailureOf(error) !== 'unavailable') return false
    app.dependencyHealth.failed('database', error)
    return true
  }
  const newWorker = (workerOptions?: OutboxWorkerOptions) =>
    createOutboxWorker({ db: app.db, clock: app.clock, log, options: workerOptions, reportOutage })
  const shared = newWorker(options)
  const workers: OutboxWorker[] = [shared]
  const workerOf = new Map<string, OutboxWorker>()

  app.decorate('outbox', {
    async enqueue(kind, payload, tx) {
      await createOutboxRepository({ db: tx ?? app.db }).insert(kind, payload, app.clock.now())
      ;(workerOf.get(kind) ?? shared).notify(tx !== undefined)
    },
    handle(kind, handler, lane) {
      let worker = shared
      if (lane) {
        worker = newWorker({ ...options, ...lane })
        workers.push(worker)
      }
      worker.handle(kind, handler)
      workerOf.set(kind, worker)
    },
    async drain() {
      const passes = await Promise.all(workers.map((worker) => worker.drain()))
      return passes.reduce(
        (sum, pass) => ({
          sent: sum.sent + pass.sent,
          retried: sum.retried + pass.retried,
          failed: sum.failed + pass.failed,
        }),
        { sent: 0, retried: 0, failed: 0 },
      )
    },
  } satisfies Outbox)

  // A delivered mail is kept a while for operators (what was sent, when), then goes: its sealed body
  // holds links (a reset token) that should not outlive their use in a table or its backups.
  const pruner = createPeriodicTask(
    async () => {
      const sentBefore = new Date(app.clock.nowMs() - retentionDays * 24 * 60 * 60_000)
      const deleted = await createOutboxRepository({ db: app.db }).deleteSentBefore(sentBefore)
      if (deleted > 0) log.info({ deleted, retentionDays }, 'outbox: delivered rows pruned')
    },
    {
      everyMs: OUTBOX_PRUNE_EVERY_MS,
      onError: (err) => log.warn({ err }, 'outbox: pruning delivered rows failed'),
    },
  )

  // Counted when scraped (one aggregate query), never on the enqueue or delivery paths.
  app.metrics.gauge({
    name: 'outbox_rows',
    help: 'Outbox rows waiting for delivery (pending) or given up on (failed).',
    labelNames: ['state'],
    async read(set) {
      const { pending, failed } = await createOutboxRepository({ db: app.db }).status()
      set({ state: 'pending' }, pending)
      set({ state: 'failed' }, failed)
    },
  })

  app.addHook('onReady', async () => {
    for (const worker of workers) worker.start()
    pruner.start()
  })
  // From the stop signal on, no new work is claimed; tries under way finish or give way (see
  // OutboxWorker.stop). Awaited in preClose, which runs before every onClose hook, so the mail
  // transport and the database (closed there) are still open meanwhile. Rows queued after this
  // wait for another instance or the next start.
  let stopping: Promise<unknown> | undefined
  const stop = () => {
    stopping ??= Promise.all([...workers.map((worker) => worker.stop()), pruner.stop()])
    return stopping
  }
  app.shutdown.draining.addEventListener('abort', () => void stop(), { once: true })
  app.addHook('preClose', async () => {
    await stop()
  })
}

export default fp(outboxPlugin, {
  name: 'outbox',
  dependencies: ['db', 'clock', 'metrics', 'shutdown', 'dependency-health'],
})
