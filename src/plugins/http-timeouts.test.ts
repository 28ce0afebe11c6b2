import { connect, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import { describe, expect, it } from 'vitest'
import { PusherSocket } from '../../test/helpers/pusher-socket.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'

// Issue 25 item 12: with requestTimeout 0, half-sent requests held their connections for ever.
const REQUEST_TIMEOUT_MS = 1_500
const HEADERS_TIMEOUT_MS = 1_000

const t = appUnderTest({
  env: {
    HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  },
  extend: (app) => {
    // An answer that takes longer than the request time-out, as a server-sent stream does.
    app.post('/test/slow-answer', { config: { csrf: false } }, async (request) => {
      await sleep(REQUEST_TIMEOUT_MS * 2)
      return { received: request.body }
    })
  },
})

const openConnections = (app: FastifyInstance) =>
  new Promise<number>((resolve, reject) =>
    app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  )

async function openSocket(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  return socket
}

/** Polls the server's connection count until it is `count` or `withinMs` has passed; answers the last. */
async function connectionsSettleAt(count: number, withinMs: number): Promise<number> {
  const until = Date.now() + withinMs
  let open = await openConnections(t.app)
  while (open !== count && Date.now() < until) {
    await sleep(100)
    open = await openConnections(t.app)
  }
  return open
}

describe('HTTP time-outs', () => {
  it('closes half-sent requests (headers or body) within the time-outs: the connection count returns to its baseline', async () => {
    const baseline = await openConnections(t.app)
    const port = Number(new URL(t.baseUrl).port)
    const sockets = await Promise.all(Array.from({ length: 60 }, () => openSocket(port)))
    sockets.forEach((socket, i) => {
      if (i % 3 === 0)
        socket.write('POST /api/login HTTP/1.1\r\nHost: x\r\n') // headers never end
      else if (i % 3 === 1) {
        // Headers complete, the body announced and never finished.
        socket.write('POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n')
        socket.write('Content-Length: 1000\r\n\r\n{"email":')
      }
      // Every third sends nothing at all.
    })
    // All held at once (accepting them may take a moment on a busy machine)...
    expect(await connectionsSettleAt(baseline + sockets.length, HEADERS_TIMEOUT_MS)).toBe(
      baseline + sockets.length,
    )

    // ...then all closed by the server: the time-out plus Node's check interval (1 s), with room for a busy machine.
    expect(await connectionsSettleAt(baseline, REQUEST_TIMEOUT_MS + 4_000)).toBe(baseline)
    for (const socket of sockets) socket.destroy()
  })

  it('does not time a request once it is in: a slow answer still arrives', async () => {
    const res = await fetch(`${t.baseUrl}/test/slow-answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello' }),
    })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ received: { text: 'hello' } })
  })

  it('takes a body sent slowly that is complete within the request time-out', async () => {
    const port = Number(new URL(t.baseUrl).port)
    const socket = await openSocket(port)
    const body = JSON.stringify({ text: 'x'.repeat(40) })
    const answer = new Promise<string>((resolve) => {
      let text = ''
      socket.on('data', (chunk) => {
        text += chunk
      })
      socket.on('close', () => resolve(text))
    })
    socket.write(
      `POST /test/slow-answer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    )
    for (let i = 0; i < body.length; i += 10) {
      socket.write(body.slice(i, i + 10))
      await sleep(REQUEST_TIMEOUT_MS / 10)
    }
    expect(await answer).toMatch(/^HTTP\/1\.1 200 /)
  })

  it('leaves a WebSocket open past the request time-out', async () => {
    const socket = await PusherSocket.open(t.baseUrl, t.config.realtime.key)
    await sleep(REQUEST_TIMEOUT_MS + 1_500)
    expect(socket.open).toBe(true)
    socket.ws.close()
    await socket.closed
  })
})
