import { createServer, type Server } from 'node:http'
import { serveFleet } from './child-fleet.ts'

/**
 * A bare `node:http` server in a process of its own, a bench's baseline where the app runs as its own
 * processes (bench/deployed.ts puts two behind nginx, in the instances' place): it answers each path
 * it was given with those very bytes, 200 and JSON, and 404 to anything else. Forked with
 * `forkFleet(..., ['start', 'close'])`; it exits when the bench lets go of it.
 */
export interface BareServer {
  /** Listens on 127.0.0.1:`port`; `answers` maps a path to its answer's bytes, base64 (IPC carries JSON). */
  start(port: number, answers: Record<string, string>): Promise<void>
  close(): Promise<void>
}

/** Idle connections stay open as long as an instance keeps them (HTTP_KEEP_ALIVE_TIMEOUT_MS' default). */
const KEEP_ALIVE_TIMEOUT_MS = 72_000

export function createBareServer(): BareServer {
  let server: Server | undefined
  return {
    async start(port, answers) {
      const bodies = new Map(
        Object.entries(answers).map(([path, base64]) => [path, Buffer.from(base64, 'base64')]),
      )
      server = createServer((req, res) => {
        const body = bodies.get(req.url ?? '')
        if (!body) {
          res.writeHead(404).end()
          return
        }
        res.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': body.length,
        })
        res.end(body)
      })
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
      const listening = server
      await new Promise<void>((resolve, reject) => {
        listening.once('error', reject)
        listening.listen(port, '127.0.0.1', () => resolve())
      })
    },
    async close() {
      const closing = server
      server = undefined
      if (!closing) return
      closing.closeAllConnections()
      await new Promise<void>((resolve) => closing.close(() => resolve()))
    },
  }
}

if (process.argv.includes('--fleet')) serveFleet(createBareServer)
