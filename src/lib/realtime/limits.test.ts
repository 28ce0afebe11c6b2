import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { type Frame, PusherSocket, type PusherSocketOptions } from '../../../test/helpers/pusher-socket.ts'
import { sharedDatabase } from '../../../test/helpers/test-database.ts'

// What one client can make an instance do and hold (issue 25): raw `ws` clients against the app's
// own port, so every frame and close is seen as sent.

let t: TestApp
const apps: TestApp[] = []
const sockets: PusherSocket[] = []

beforeAll(async () => {
  t = await buildTestApp()
})
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.terminate()
})
afterAll(async () => {
  for (const app of apps) await app.close().catch(() => {})
  await t?.close()
})

/** Another app on the same database with some settings changed. */
async function appWith(env: Record<string, string>): Promise<TestApp> {
  const app = await buildTestApp({ env, database: sharedDatabase(t.database) })
  apps.push(app)
  return app
}

const unique = (prefix: string) => `${prefix}.${randomBytes(4).toString('hex')}`

async function connect(on: TestApp = t, options?: PusherSocketOptions): Promise<PusherSocket> {
  const socket = new PusherSocket(on.baseUrl, on.config.realtime.key, options)
  sockets.push(socket)
  await socket.waitFor((f) => f.event === 'pusher:connection_established')
  return socket
}

const errors = (socket: PusherSocket, from = 0) =>
  socket.since(from, 'pusher:error').map((f: Frame) => f.data as { code: number; message: string })

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('channels and frames per socket (REVERB_MAX_CHANNELS_PER_CONNECTION, REVERB_APP_RATE_LIMIT_*)', () => {
  it('holds 100 channels per socket by default: the 101st is refused with 4009, one frees a slot', async () => {
    const socket = await connect()
    const names = Array.from({ length: 101 }, (_, i) => unique(`room-${i}`))
    for (const name of names.slice(0, 100)) socket.send('pusher:subscribe', { channel: name })
    await socket.waitFor(
      (f) => f.event === 'pusher_internal:subscription_succeeded' && f.channel === names[99],
    )
    const refused = await socket.subscribe(names[100] as string)
    expect(refused.data).toEqual({ code: 4009, message: 'Too many channels on this connection' })
    expect(t.app.realtime.hub.subscriptionCount()).toBe(100)

    socket.send('pusher:unsubscribe', { channel: names[0] })
    const taken = await socket.subscribe(names[100] as string)
    expect(taken.event).toBe('pusher_internal:subscription_succeeded')
    expect(socket.open).toBe(true)
  })

  it('drops frames past the rate limit, answering 4301 once per window, and takes them again after it', async () => {
    const app = await appWith({
      REVERB_APP_RATE_LIMIT_MAX_ATTEMPTS: '5',
      REVERB_APP_RATE_LIMIT_DECAY_SECONDS: '1',
    })
    const socket = await connect(app)
    const from = socket.mark()
    for (let i = 0; i < 50; i++) socket.send('pusher:subscribe', { channel: unique('flood') })
    await socket.waitFor((f) => f.event === 'pusher:error', 3000, from)
    await pause(1200)
    expect(socket.since(from, 'pusher_internal:subscription_succeeded')).toHaveLength(5)
    expect(errors(socket, from)).toEqual([{ code: 4301, message: 'Rate limit exceeded' }])
    expect(app.app.realtime.hub.subscriptionCount()).toBe(5)

    const pong = socket.mark()
    socket.send('pusher:ping')
    await socket.waitFor((f) => f.event === 'pusher:pong', 3000, pong)
    expect(socket.open).toBe(true)
  })
})
