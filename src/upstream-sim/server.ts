import { createHash, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createSimulator, type SimAnswer } from './simulator.ts'

export interface SimulatorLogger {
  info(object: object, message?: string): void
  debug(object: object, message?: string): void
}

export interface SimulatorOptions {
  /** 0 picks a free ephemeral port. */
  port: number
  host?: string
  /** The bearer token every call must carry. */
  token: string
  logger?: SimulatorLogger
}

export interface RunningSimulator {
  url: string
  close(): Promise<void>
}

const MAX_BODY = 1024 * 1024
const digest = (text: string) => createHash('sha256').update(text).digest()

function send(res: ServerResponse, answer: SimAnswer) {
  if (answer.body === undefined) {
    res.writeHead(answer.status)
    res.end()
    return
  }
  const payload = JSON.stringify(answer.body)
  res.writeHead(answer.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  })
  res.end(payload)
}

async function readBody(req: IncomingMessage): Promise<{ body: unknown } | { error: SimAnswer }> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY) return { error: { status: 413, body: { message: 'Content Too Large' } } }
    chunks.push(chunk as Buffer)
  }
  const text = Buffer.concat(chunks).toString('utf8')
  if (text.trim() === '') return { body: undefined }
  try {
    return { body: JSON.parse(text) }
  } catch {
    return { error: { status: 400, body: { message: 'The request body is not valid JSON.' } } }
  }
}

/**
 * The simulated upstream over HTTP (UPSTREAM.md): checks `Authorization: Bearer <token>` on every
 * call, then answers from one in-memory simulator.
 */
export async function startUpstreamSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  if (!options.token) throw new Error('the upstream simulator needs a bearer token to check')
  const expected = digest(`Bearer ${options.token}`)
  const simulator = createSimulator()
  const host = options.host ?? '127.0.0.1'

  async function answer(req: IncomingMessage): Promise<SimAnswer> {
    // Hashing both sides gives equal lengths, so the comparison takes the same time for any guess.
    if (!timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) {
      return { status: 401, body: { message: 'Unauthenticated.' } }
    }
    const read = await readBody(req)
    if ('error' in read) return read.error
    const url = req.url ?? '/'
    const mark = url.indexOf('?')
    const [path, query] = mark === -1 ? [url, ''] : [url.slice(0, mark), url.slice(mark + 1)]
    const userId = req.headers['x-user-id']
    return simulator.handle({
      method: req.method ?? 'GET',
      // The raw path: segments are decoded one by one, so `a%2Fb` stays one segment.
      path,
      query: new URLSearchParams(query),
      userId: typeof userId === 'string' && userId !== '' ? userId : undefined,
      body: read.body,
      origin: `http://${req.headers.host ?? host}`,
    })
  }

  const server = createServer((req, res) => {
    const started = performance.now()
    answer(req).then(
      (result) => {
        send(res, result)
        const path = (req.url ?? '/').split('?', 1)[0]
        const ms = Math.round(performance.now() - started)
        options.logger?.debug(
          { method: req.method, path, status: result.status, ms },
          'upstream simulator request',
        )
      },
      // Only a client that went away mid-body gets here; there is no one left to answer.
      () => res.destroy(),
    )
  })
  server.keepAliveTimeout = 65_000

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, host, () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const shownHost = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shownHost}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
