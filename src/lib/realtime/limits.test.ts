import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { buildTestApp, SPA_ORIGIN, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { createGroup } from '../../../test/helpers/chat.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import { type Frame, PusherSocket, type PusherSocketOptions } from '../../../test/helpers/pusher-socket.ts'
import { sharedDatabase } from '../../../test/helpers/test-database.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { throttleAddress } from '../rate-limit/address.ts'
import { channelAuth } from './signatures.ts'

// What one client can make an instance do and hold (issue 25): raw `ws` clients against the app's
// own port, so every frame and close is seen as sent.

const t = appUnderTest()
const apps: TestApp[] = []
const sockets: PusherSocket[] = []

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.terminate()
})
afterAll(async () => {
  for (const app of apps) await app.close().catch(() => {})
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

/** A socket not waited for: its first frame may be an error. */
function dial(on: TestApp = t, options?: PusherSocketOptions): PusherSocket {
  const socket = new PusherSocket(on.baseUrl, on.config.realtime.key, options)
  sockets.push(socket)
  return socket
}

const closedWithin = (socket: PusherSocket, ms = 3000) =>
  Promise.race([socket.closed, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms))])

const errors = (socket: PusherSocket, from = 0) =>
  socket.since(from, 'pusher:error').map((f: Frame) => f.data as { code: number; message: string })

/** A member of a presence channel, signed as the auth route would sign them. */
async function member(on: TestApp, channel: string, userId: string): Promise<PusherSocket> {
  const socket = await connect(on)
  const channelData = JSON.stringify({ user_id: userId, user_info: { id: Number(userId) } })
  const { key, secret } = on.config.realtime
  const reply = await socket.subscribe(
    channel,
    channelAuth(key, secret, socket.socketId, channel, channelData),
    channelData,
  )
  expect(reply.event).toBe('pusher_internal:subscription_succeeded')
  return socket
}

/**
 * Waits until the senders have had `refusals` errors between them, then until a probe published
 * after them reaches `witness`: deliveries keep their order, so every whisper passed has arrived.
 */
async function handled(senders: PusherSocket[], refusals: number, channel: string, witness: PusherSocket) {
  const until = Date.now() + 3000
  while (senders.flatMap((sender) => errors(sender)).length < refusals && Date.now() < until) await pause(20)
  const id = randomBytes(4).toString('hex')
  await t.app.realtime.publish([channel], 'probe', { id })
  await witness.waitFor((f) => f.event === 'probe' && f.data?.id === id)
}

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

describe('channels remembered per socket (twice REVERB_MAX_CHANNELS_PER_CONNECTION)', () => {
  it('remembers the channels authorized for a socket up to the bound; past it the socket is closed to reconnect (4200)', async () => {
    const app = await appWith({ REVERB_MAX_CHANNELS_PER_CONNECTION: '2' })
    const { client, user } = await signedInClient(app)
    const first = await createGroup(client)
    const second = await createGroup(client)
    const socket = await connect(app)
    const authorize = (channel: string) =>
      client.post('/api/broadcasting/auth', { socket_id: socket.socketId, channel_name: channel })
    const channels = [
      `private-App.Models.User.${user.id}`,
      `private-chat.group.${first.id}`,
      `presence-chat.group.${first.id}`,
      `private-chat.group.${second.id}`,
    ]
    // Authorized twice: still one each.
    for (const channel of [...channels, ...channels]) expect((await authorize(channel)).status).toBe(200)
    const pong = socket.mark()
    socket.send('pusher:ping')
    await socket.waitFor((f) => f.event === 'pusher:pong', 3000, pong)
    expect(socket.open).toBe(true)

    expect((await authorize(`presence-chat.group.${second.id}`)).status).toBe(200)
    const closed = await closedWithin(socket)
    expect(closed?.code).toBe(4200)
    expect(errors(socket)).toEqual([
      { code: 4200, message: 'Too many channels authorized on this connection' },
    ])
  })
})

describe('sockets per client address (REVERB_MAX_CONNECTIONS_PER_ADDRESS)', () => {
  it('refuses a third socket from one address with 4004 while others still connect', async () => {
    const app = await appWith({ REVERB_MAX_CONNECTIONS_PER_ADDRESS: '2', TRUSTED_PROXIES: '127.0.0.1' })
    const from = (address: string) => ({ headers: { 'X-Forwarded-For': address } })
    const first = await connect(app, from('203.0.113.7'))
    await connect(app, from('203.0.113.7'))
    const third = dial(app, from('203.0.113.7'))
    expect((await closedWithin(third))?.code).toBe(4004)
    expect(errors(third)).toEqual([{ code: 4004, message: 'Application is over connection quota' }])

    // Another client is not held back.
    await connect(app, from('198.51.100.9'))
    // One /64 is one client: its second address is refused too.
    await connect(app, from('2001:db8:1:2::a'))
    await connect(app, from('2001:db8:1:2:ffff::b'))
    const sameSubnet = dial(app, from('2001:db8:1:2::c'))
    expect((await closedWithin(sameSubnet))?.code).toBe(4004)
    await connect(app, from('2001:db8:1:3::a'))

    // A slot comes back when a socket leaves.
    first.close()
    await closedWithin(first)
    let again: PusherSocket | undefined
    for (let i = 0; i < 20 && !again?.frames.some((f) => f.event === 'pusher:connection_established'); i++) {
      await pause(50)
      again = dial(app, from('203.0.113.7'))
      await Promise.race([
        again.waitFor((f) => f.event === 'pusher:connection_established', 500),
        again.closed,
      ]).catch(() => {})
    }
    expect(again?.frames[0]?.event).toBe('pusher:connection_established')
  })

  it('keys addresses as IPv4, or the /64 of an IPv6 address', () => {
    expect(throttleAddress('203.0.113.7')).toBe('203.0.113.7')
    expect(throttleAddress('::ffff:203.0.113.7')).toBe('203.0.113.7')
    expect(throttleAddress('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64')
    expect(throttleAddress('2001:0db8:0001:0002:ffff:0:0:b')).toBe('2001:db8:1:2::/64')
    expect(throttleAddress('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(throttleAddress('::1')).toBe('0:0:0:0::/64')
  })
})

describe('a socket that stops reading (REVERB_MAX_BUFFERED_KB)', () => {
  it('is closed with 4101 once its backlog passes the bound, which the server never exceeds by more than a frame', async () => {
    const app = await appWith({ REVERB_MAX_BUFFERED_KB: '256' })
    const channel = unique('ticker')
    const reader = await connect(app)
    await reader.subscribe(channel)
    const stalled = await connect(app)
    await stalled.subscribe(channel)
    // The client stops reading: the kernel's buffers fill, then the server's queue.
    const tcp = (stalled.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket
    tcp.pause()

    const frameBytes = 10 * 1024
    const bound = 256 * 1024
    let peak = 0
    // Some 40 MB: more than loopback's socket buffers can take.
    for (let i = 0; i < 4000; i++) {
      await app.app.realtime.publish([channel], 'tick', { i, pad: 'x'.repeat(frameBytes) })
      if (i % 50 === 0) {
        await new Promise((resolve) => setImmediate(resolve))
        peak = Math.max(peak, app.app.realtime.hub.bufferedBytes())
      }
    }
    expect(peak).toBeLessThanOrEqual(bound + 2 * frameBytes)
    expect((await fetch(`${app.baseUrl}/up`)).status).toBe(200)
    // The reading socket got everything, and stays.
    await reader.waitFor((f) => f.event === 'tick' && f.data.i === 3999, 10_000)
    expect(reader.open).toBe(true)

    tcp.resume()
    const closed = await closedWithin(stalled, 10_000)
    expect(closed?.code).toBe(4101)
  })
})

describe('client events per user and per channel', () => {
  it('gives a user’s sockets one budget of 10 a second, and a channel 50 a second whoever sends', async () => {
    const channel = unique('presence-chat.group')
    const receiver = await member(t, channel, '900')
    // One user, three tabs: 15 whispers, 10 pass.
    const tabs = [
      await member(t, channel, '901'),
      await member(t, channel, '901'),
      await member(t, channel, '901'),
    ]
    const from = receiver.mark()
    for (const [n, tab] of tabs.entries())
      for (let i = 0; i < 5; i++) tab.send('client-typing', { n, i }, channel)
    await handled(tabs, 5, channel, receiver)
    expect(receiver.since(from, 'client-typing')).toHaveLength(10)
    const refused = tabs.flatMap((tab) => errors(tab))
    expect(refused).toHaveLength(5)
    expect(refused.every((e) => e.code === 4301)).toBe(true)
    await pause(1100)

    // Seven users, 10 each within a second: the channel passes 50.
    const senders = await Promise.all(
      Array.from({ length: 7 }, (_, i) => member(t, channel, String(910 + i))),
    )
    const before = receiver.mark()
    for (const sender of senders) for (let i = 0; i < 10; i++) sender.send('client-typing', { i }, channel)
    await handled(senders, 20, channel, receiver)
    expect(receiver.since(before, 'client-typing')).toHaveLength(50)
    expect(senders.flatMap((sender) => errors(sender))).toHaveLength(20)
  })
})

describe('the Origin of a socket (REVERB_ALLOWED_ORIGINS)', () => {
  it('takes APP_URL’s and FRONTEND_URL’s origins and sockets without Origin; refuses others with 4009', async () => {
    await connect(t, { headers: { Origin: SPA_ORIGIN } })
    await connect(t, { headers: { Origin: new URL(t.config.appUrl).origin } })
    await connect(t)
    for (const origin of ['https://evil.example', 'null', 'http://spa.test:5174']) {
      const foreign = dial(t, { headers: { Origin: origin } })
      expect((await closedWithin(foreign))?.code).toBe(4009)
      expect(foreign.frames.map((f) => f.event)).toEqual(['pusher:error'])
      expect(errors(foreign)).toEqual([{ code: 4009, message: 'Origin not allowed' }])
    }
    expect(t.app.realtime.hub.connectionCount()).toBeLessThanOrEqual(3)
  })

  it('takes only the origins named, or any with *', async () => {
    const named = await appWith({ REVERB_ALLOWED_ORIGINS: 'https://app.example.com' })
    await connect(named, { headers: { Origin: 'https://app.example.com' } })
    const spa = dial(named, { headers: { Origin: SPA_ORIGIN } })
    expect((await closedWithin(spa))?.code).toBe(4009)

    const any = await appWith({ REVERB_ALLOWED_ORIGINS: '*' })
    await connect(any, { headers: { Origin: 'https://anywhere.example' } })
  })
})
