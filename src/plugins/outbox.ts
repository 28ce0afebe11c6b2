import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from '../db/client.ts'
import { createOutboxRepository } from '../lib/outbox/outbox.repository.ts'
import {
  createOutboxWorker,
  type OutboxHandler,
  type OutboxWorkerOptions,
  type PassStats,
} from '../lib/outbox/outbox.worker.ts'

export interface Outbox {
  /**
   * Writes a row of `kind` through `tx` (or the app's database): when the caller passes its
   * transaction, the row exists if and only if that transaction commits. The worker delivers it.
   */
  enqueue(kind: string, payload: Record<string, unknown>, tx?: Db): Promise<void>
  /** Sets who delivers rows of `kind` (the mailer does "mail"). */
  handle(kind: string, handler: OutboxHandler): void
  /** Delivers what is due now and answers what this instance did; polling does the same every few seconds. */
  drain(): Promise<PassStats>
}

declare module 'fastify' {
  interface FastifyInstance {
    outbox: Outbox
  }
}

/** `app.outbox`: durable side effects (mail), delivered by a worker that starts with the app. */
async function outboxPlugin(app: FastifyInstance, { options }: { options?: OutboxWorkerOptions } = {}) {
  const worker = createOutboxWorker({
    db: app.db,
    clock: app.clock,
    log: app.log.child({ component: 'outbox' }),
    options,
  })

  app.decorate('outbox', {
    async enqueue(kind, payload, tx) {
      await createOutboxRepository({ db: tx ?? app.db }).insert(kind, payload, app.clock.now())
      worker.notify(tx !== undefined)
    },
    handle: worker.handle,
    drain: worker.drain,
  } satisfies Outbox)

  app.addHook('onReady', async () => {
    worker.start()
  })
  // preClose runs before every onClose hook, so the mail transport and the database (closed there)
  // are still open while the delivery under way finishes. Rows queued after this wait for the next start.
  app.addHook('preClose', async () => {
    await worker.stop()
  })
}

export default fp(outboxPlugin, { name: 'outbox', dependencies: ['db', 'clock'] })
