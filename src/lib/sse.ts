import { once } from 'node:events'
import { PassThrough } from 'node:stream'
import type { FastifyReply } from 'fastify'

/** Where a streamed answer writes its events; `signal` aborts when the client goes away. */
export interface EventSink<T> {
  write(event: T): void | Promise<void>
  signal: AbortSignal
}

export interface SseOptions<T> {
  headers: Record<string, string>
  /** One event as SSE text (`data: ...\n\n`). */
  frame(event: T): string
  /** Written after the last event (the AI SDK's `data: [DONE]`). */
  end?: string
  log: { error(obj: object, msg: string): void }
}

/**
 * Answers with a server-sent event stream that `produce` writes into, through Fastify's reply (so
 * CORS, cookies and the request id are sent as on any answer). Each event is written as it comes:
 * nothing buffers or compresses it. Writes wait while the socket is full; when the client goes
 * away, `signal` aborts and further writes are dropped.
 */
export function sendEventStream<T>(
  reply: FastifyReply,
  options: SseOptions<T>,
  produce: (sink: EventSink<T>) => Promise<void>,
): FastifyReply {
  const out = new PassThrough()
  const gone = new AbortController()
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) gone.abort()
  })
  // Events made in one turn of the event loop (a model chunk becomes several) go out as one write
  // at the end of it: one syscall instead of one each, and no event waits longer than that turn.
  let pending = ''
  let flushing: NodeJS.Immediate | null = null
  const flush = () => {
    flushing = null
    if (pending && !out.destroyed) out.write(pending)
    pending = ''
  }
  const sink: EventSink<T> = {
    signal: gone.signal,
    async write(event) {
      if (gone.signal.aborted || out.destroyed) return
      pending += options.frame(event)
      flushing ??= setImmediate(flush)
      if (out.writableNeedDrain) await once(out, 'drain', { signal: gone.signal }).catch(() => {})
    },
  }
  produce(sink)
    .catch((err) => options.log.error({ err }, 'event stream failed'))
    .finally(() => {
      if (flushing) clearImmediate(flushing)
      flushing = null
      if (!out.destroyed) out.end(pending + (options.end ?? ''))
      pending = ''
    })
  for (const [name, value] of Object.entries(options.headers)) reply.header(name, value)
  return reply.code(200).send(out)
}
