import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createSimulator, type Simulator } from '../../src/upstream-sim/simulator.ts'

export interface RecordedCall {
  method: string
  /** Raw path + query as received, nothing decoded. */
  url: string
  path: string
  query: string
  headers: Record<string, string | string[] | undefined>
  /** Parsed JSON when the body is JSON, the raw text otherwise, undefined when empty. */
  body: unknown
}

export type FakeAnswer =
  | { status?: number; body: unknown; delayMs?: number }
  | { hang: true }
  | { hangAfterHeaders: true }
  | { resetMidBody: true }
  | { raw: string; status?: number; contentType?: string }
  | ((call: RecordedCall) => FakeAnswer | Promise<FakeAnswer>)

interface Rule {
  method: string
  pattern: RegExp
  answer: FakeAnswer
}

/** `/strategy/:id/conditions` -> a RegExp over the raw path; each `:param` is one segment. */
function pathPattern(path: string | RegExp): RegExp {
  if (path instanceof RegExp) return path
  const source = path
    .split('/')
    .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/')
  return new RegExp(`^${source}$`)
}

/**
 * A recording stand-in for the upstream trading-data API: a real HTTP server on a loopback port that
 * keeps every call (headers included) and checks nothing. Unless a test says otherwise with `on()`,
 * it answers like the built-in simulator (without its token check), so every route works.
 */
export class FakeUpstream {
  readonly calls: RecordedCall[] = []
  url = ''
  private rules: Rule[] = []
  private simulator: Simulator = createSimulator()
  private server: Server | null = null

  /**
   * Listens on a loopback port: a new one the first time, the same one again after `stop()`, so a
   * test can take the upstream down (connections refused) and bring it back at the address the app
   * was configured with.
   */
  async start(): Promise<this> {
    // A client that gives up mid-request must not crash the test run.
    const server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()))
    const port = this.url ? Number(new URL(this.url).port) : 0
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    this.server = server
    return this
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = null
    if (!server) return
    // Hung answers keep their sockets open; close them so stop() never waits on a test's hang.
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  /** The latest rule registered for a call wins, so a test can override an earlier `on()`. */
  on(method: string, path: string | RegExp, answer: FakeAnswer): this {
    this.rules.unshift({ method: method.toUpperCase(), pattern: pathPattern(path), answer })
    return this
  }

  /** Forgets calls, custom answers and the simulated per-user data. */
  reset(): void {
    this.calls.length = 0
    this.rules = []
    this.simulator = createSimulator()
  }

  /** Calls with this method (`*` for any) whose raw path starts with `pathPrefix`. */
  callsTo(method: string, pathPrefix: string): RecordedCall[] {
    const wanted = method.toUpperCase()
    return this.calls.filter((c) => (wanted === '*' || c.method === wanted) && c.path.startsWith(pathPrefix))
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    let body: unknown
    if (text !== '') {
      try {
        body = JSON.parse(text)
      } catch {
        body = text
      }
    }
    const url = req.url ?? '/'
    const mark = url.indexOf('?')
    const call: RecordedCall = {
      method: (req.method ?? 'GET').toUpperCase(),
      url,
      path: mark === -1 ? url : url.slice(0, mark),
      query: mark === -1 ? '' : url.slice(mark + 1),
      headers: { ...req.headers },
      body,
    }
    this.calls.push(call)
    const rule = this.rules.find(
      (r) => (r.method === '*' || r.method === call.method) && r.pattern.test(call.path),
    )
    try {
      await this.send(res, call, rule ? rule.answer : this.defaultAnswer(call))
    } catch (error) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ message: `fake upstream answer failed: ${String(error)}` }))
    }
  }

  private defaultAnswer(call: RecordedCall): FakeAnswer {
    const userId = call.headers['x-user-id']
    const answer = this.simulator.handle({
      method: call.method,
      path: call.path,
      query: new URLSearchParams(call.query),
      userId: typeof userId === 'string' ? userId : undefined,
      body: call.body,
      origin: `http://${call.headers.host ?? '127.0.0.1'}`,
    })
    return { status: answer.status, body: answer.body }
  }

  private async send(res: ServerResponse, call: RecordedCall, answer: FakeAnswer): Promise<void> {
    if (typeof answer === 'function') return this.send(res, call, await answer(call))
    if ('hang' in answer) return
    if ('hangAfterHeaders' in answer) {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.flushHeaders()
      return
    }
    if ('resetMidBody' in answer) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100000' })
      res.write('{"data":[{"id":1,"name":"trunc')
      // Let the partial body leave before the socket goes, so the client sees a reset mid-body.
      setTimeout(() => res.socket?.destroy(), 20)
      return
    }
    if ('raw' in answer) {
      res.writeHead(answer.status ?? 200, {
        'content-type': answer.contentType ?? 'text/html; charset=utf-8',
      })
      res.end(answer.raw)
      return
    }
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs))
    const status = answer.status ?? 200
    if (status === 204 || answer.body === undefined) {
      res.writeHead(status)
      res.end()
      return
    }
    res.writeHead(status, { 'content-type': 'application/json' })
    res.end(JSON.stringify(answer.body))
  }
}

/**
 * An answer (for `FakeUpstream.on`) held until the test calls `release()`: an upstream exactly as
 * slow as the test says, with no sleeps. Counts the calls it got and how many were held at once.
 */
export function heldAnswer(answer: Exclude<FakeAnswer, (call: RecordedCall) => unknown>) {
  const waiting: (() => void)[] = []
  const held = {
    calls: 0,
    /** Calls held right now, and the most there ever were at once. */
    underWay: 0,
    mostAtOnce: 0,
    answer: async (): Promise<FakeAnswer> => {
      held.calls++
      held.underWay++
      held.mostAtOnce = Math.max(held.mostAtOnce, held.underWay)
      await new Promise<void>((resolve) => waiting.push(resolve))
      held.underWay--
      return answer
    },
    /** Lets every call held so far answer. */
    release() {
      for (const resolve of waiting.splice(0)) resolve()
    },
  }
  return held
}
