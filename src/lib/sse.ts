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
  const sink: EventSink<T> = {
    signal: gone.signal,
    async write(event) {
      if (gone.signal.aborted || out.destroyed) return
      if (!out.write(options.frame(event))) await once(out, 'drain', { signal: gone.signal }).catch(() => {})
    },
  }
  produce(sink)
    .catch((err) => options.log.error({ err }, 'event stream failed'))
    .finally(() => {
      if (!out.destroyed) out.end(options.end)
    })
  for (const [name, value] of Object.entries(options.headers)) reply.header(name, value)
  return reply.code(200).send(out)
}
