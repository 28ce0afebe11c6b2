import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** How this instance stops, in phases the other plugins and the modules wind down on. */
export interface Shutdown {
  /**
   * Aborts at the stop signal: `/up` answers 503 and every answer closes its connection, so the
   * balancer and the proxy's kept-alive connections move to the other instances; real-time sockets
   * are let go in turns and the outbox workers claim no more work.
   */
  readonly draining: AbortSignal
  /**
   * Aborts once the grace period is over, just before the listener closes: what would stream on
   * for long (an AI answer) ends now, cleanly, so every request the close waits for finishes.
   */
  readonly closing: AbortSignal
  /**
   * The whole stop, once: draining at once, still listening for `graceMs`, then `app.close()`
   * (the listener and idle connections close, in-flight requests finish, the database closes).
   */
  stop(): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    shutdown: Shutdown
  }
}

/**
 * `app.shutdown`: the stop sequence server.ts runs on SIGTERM. The grace period is for balancers
 * without active health checks (open-source nginx): they only learn from refused connections, so
 * this instance keeps serving, every answer with `Connection: close` (app.ts's header hook: a
 * kept-alive connection closes after its answer, never with a request on it), until it stops
 * listening.
 */
async function shutdownPlugin(app: FastifyInstance, { graceMs }: { graceMs: number }) {
  const draining = new AbortController()
  const closing = new AbortController()
  let stopped: Promise<void> | undefined

  app.decorate('shutdown', {
    draining: draining.signal,
    closing: closing.signal,
    stop() {
      stopped ??= (async () => {
        draining.abort()
        await sleep(graceMs)
        app.log.info({ graceMs }, 'stopping: grace period over, no longer accepting connections')
        await app.close()
      })()
      return stopped
    },
  } satisfies Shutdown)

  // First of every preClose hook (this plugin is registered before the others). An app.close()
  // without stop() (tests, a failed start) goes through the same phases, only with no grace period.
  app.addHook('preClose', (done) => {
    draining.abort()
    closing.abort()
    done()
  })
}

export default fp(shutdownPlugin, { name: 'shutdown' })
