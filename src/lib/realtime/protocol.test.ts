import { randomBytes } from 'node:crypto'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { createGroup } from '../../../test/helpers/chat.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import { type Frame, PusherSocket } from '../../../test/helpers/pusher-socket.ts'
import { sharedDatabase } from '../../../test/helpers/test-database.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { channelAuth } from './signatures.ts'

// The Pusher protocol (version 7) as pusher-js and Reverb speak it, through raw `ws` clients against
// the app's own port: every frame is seen as sent, so each rule is checked where it is applied.

const t = appUnderTest()
const sockets: PusherSocket[] = []
const extraApps: TestApp[] = []

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.close()
})
afterAll(async () => {
  for (const app of extraApps) await app.close().catch(() => {})
})

const unique = (prefix: string) => `${prefix}.${randomBytes(4).toString('hex')}`

/** A raw socket on the main test app (or another), connected; closed after the test. */
async function connect(on: TestApp = t, options?: { autoPong?: boolean }): Promise<PusherSocket> {
  const socket = await PusherSocket.open(on.baseUrl, on.config.realtime.key, options)
  sockets.push(socket)
  return socket
}

/** A socket that is not waited for (its first frame may be an error). */
function dial(on: TestApp = t, options?: { autoPong?: boolean }): PusherSocket {
  const socket = new PusherSocket(on.baseUrl, on.config.realtime.key, options)
  sockets.push(socket)
  return socket
}

/** What this server would sign for a socket (private, or presence with the exact channel_data). */
const sign = (socket: PusherSocket, channel: string, channelData?: string) =>
  channelAuth(t.config.realtime.key, t.config.realtime.secret, socket.socketId, channel, channelData)

/** A socket subscribed to `channel` (signed when it is private or presence), or the test fails. */
async function subscribed(channel: string, channelData?: string): Promise<PusherSocket> {
  const socket = await connect()
  const auth =
    channel.startsWith('private-') || channel.startsWith('presence-')
      ? sign(socket, channel, channelData)
      : undefined
  const reply = await socket.subscribe(channel, auth, channelData)
  expect(reply.event).toBe('pusher_internal:subscription_succeeded')
  return socket
}

/**
 * Publishes a probe event to the channel from the server and waits until `witness` receives it:
 * deliveries go out in order, so whatever was sent before the probe has arrived by then.
 */
async function probe(channel: string, witness: PusherSocket): Promise<void> {
  const id = randomBytes(4).toString('hex')
  await t.app.realtime.publish([channel], 'probe', { id })
  await witness.waitFor((f) => f.event === 'probe' && f.channel === channel && f.data?.id === id)
}

/** The close, or null if the socket is still open after `ms`. */
const closedWithin = (socket: PusherSocket, ms = 3000) =>
  Promise.race([socket.closed, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms))])

const errorCode = (frame: Frame) => (frame.event === 'pusher:error' ? frame.data?.code : undefined)

describe('connecting', () => {
  it('answers pusher:connection_established with a "%d.%d" socket id and activity_timeout 30', async () => {
    const socket = await connect()
    const established = socket.frames[0] as Frame
    expect(established.event).toBe('pusher:connection_established')
    // data is a JSON-encoded string, as pusher-js expects
    expect(typeof established.rawData).toBe('string')
    expect(established.data).toEqual({ socket_id: expect.stringMatching(/^\d+\.\d+$/), activity_timeout: 30 })
    const [left, right] = socket.socketId.split('.').map(Number) as [number, number]
    for (const part of [left, right]) {
      expect(part).toBeGreaterThanOrEqual(1)
      expect(part).toBeLessThanOrEqual(1_000_000_000)
    }
    const other = await connect()
    expect(other.socketId).not.toBe(socket.socketId)
  })

  it('makes socket ids from a cryptographic source: Math.random tells nothing of them', async () => {
    // Math.random's generator can be recovered from a few of its outputs; a socket id must not be.
    const pinned = vi.spyOn(Math, 'random').mockReturnValue(0.5)
    try {
      const first = await connect()
      const second = await connect()
      expect(first.socketId).toMatch(/^\d{1,10}\.\d{1,10}$/)
      expect(second.socketId).not.toBe(first.socketId)
    } finally {
      pinned.mockRestore()
    }
  })

  it('refuses an unknown app key with pusher:error 4001 and closes the socket with 4001', async () => {
    const socket = new PusherSocket(t.baseUrl, 'not-the-app-key')
    sockets.push(socket)
    const closed = await closedWithin(socket)
    expect(socket.frames.map((f) => f.event)).toEqual(['pusher:error'])
    expect(socket.frames[0]?.data).toEqual({ code: 4001, message: 'Application does not exist' })
    expect(closed?.code).toBe(4001)
  })

  it('answers pusher:ping with pusher:pong', async () => {
    const socket = await connect()
    const from = socket.mark()
    socket.send('pusher:ping', {})
    const pong = await socket.waitFor((f) => f.event.startsWith('pusher:'), 3000, from)
    expect(pong.event).toBe('pusher:pong')
    expect(socket.open).toBe(true)
  })
})

describe('subscribing', () => {
  it('subscribes to a public channel without auth, and delivers its events', async () => {
    const socket = await connect()
    const channel = unique('market')
    const reply = await socket.subscribe(channel)
    expect(reply).toMatchObject({ event: 'pusher_internal:subscription_succeeded', channel })
    await probe(channel, socket)
  })

  it('refuses a private channel with a missing or wrong signature (4009) and delivers it nothing', async () => {
    const channel = unique('private-orders')
    const witness = await subscribed(channel)
    const socket = await connect()
    const otherSocket = await connect()
    const attempts = [
      undefined, // no auth at all
      '',
      sign(otherSocket, channel), // signed for another socket
      sign(socket, `${channel}x`), // signed for another channel
      `${t.config.realtime.key}:${'0'.repeat(64)}`,
      channelAuth(t.config.realtime.key, 'a-different-secret-entirely', socket.socketId, channel),
      channelAuth('another-key', t.config.realtime.secret, socket.socketId, channel),
      sign(socket, channel).toUpperCase(),
    ]
    for (const auth of attempts) {
      const reply = await socket.subscribe(channel, auth)
      expect(reply.event, `auth ${auth}`).toBe('pusher:error')
      expect(reply.data, `auth ${auth}`).toEqual({ code: 4009, message: 'Connection is unauthorized' })
    }
    const from = socket.mark()
    await probe(channel, witness)
    await probe(channel, witness)
    expect(socket.since(from)).toEqual([])
    expect(socket.since(0, 'pusher_internal:subscription_succeeded')).toEqual([])
    expect(socket.open).toBe(true)
  })

  it('subscribes private channels signed by POST /api/broadcasting/auth for the user and a member', async () => {
    const { client, user } = await signedInClient(t)
    const group = await createGroup(client)
    const socket = await connect()
    for (const channel of [`private-App.Models.User.${user.id}`, `private-chat.group.${group.id}`]) {
      const res = await client.post('/api/broadcasting/auth', {
        socket_id: socket.socketId,
        channel_name: channel,
      })
      expect(res.status).toBe(200)
      expect(res.data).toEqual({ auth: sign(socket, channel) })
      const reply = await socket.subscribe(channel, res.data.auth)
      expect(reply).toMatchObject({ event: 'pusher_internal:subscription_succeeded', channel, data: {} })
      expect(reply.rawData).toBe('{}')
      await probe(channel, socket)
    }
  })

  it('subscribes a private channel with a signature computed as the server signs', async () => {
    const socket = await connect()
    const channel = unique('private-desk')
    const reply = await socket.subscribe(channel, sign(socket, channel))
    expect(reply).toMatchObject({ event: 'pusher_internal:subscription_succeeded', channel })
    await probe(channel, socket)
  })

  it('checks a presence signature over exactly the channel_data string sent', async () => {
    const { client, user } = await signedInClient(t, { name: 'Ada Presence' })
    const group = await createGroup(client)
    const channel = `presence-chat.group.${group.id}`

    const refused = await connect()
    const res = await client.post('/api/broadcasting/auth', {
      socket_id: refused.socketId,
      channel_name: channel,
    })
    expect(res.status).toBe(200)
    const { auth, channel_data: channelData } = res.data as { auth: string; channel_data: string }
    const member = JSON.parse(channelData)
    expect(member).toEqual({
      user_id: String(user.id),
      user_info: { id: user.id, name: 'Ada Presence', profile_photo_url: null },
    })
    // the same member, serialised differently: not what was signed
    const reserialised = [
      JSON.stringify(member, null, 1),
      JSON.stringify({ user_info: member.user_info, user_id: member.user_id }),
      JSON.stringify({ ...member, user_id: user.id }),
      `${channelData} `,
    ]
    for (const data of reserialised) {
      const reply = await refused.subscribe(channel, auth, data)
      expect(reply.event, data).toBe('pusher:error')
      expect(errorCode(reply), data).toBe(4009)
    }
    const withoutData = await refused.subscribe(channel, auth)
    expect(errorCode(withoutData)).toBe(4009)
    const privateStyle = await refused.subscribe(channel, sign(refused, channel))
    expect(errorCode(privateStyle)).toBe(4009)
    expect(refused.since(0, 'pusher_internal:subscription_succeeded')).toEqual([])

    const accepted = await refused.subscribe(channel, auth, channelData)
    expect(accepted.event).toBe('pusher_internal:subscription_succeeded')
    expect(typeof accepted.rawData).toBe('string')
    expect(accepted.data).toEqual({
      presence: { count: 1, ids: [String(user.id)], hash: { [String(user.id)]: member.user_info } },
    })
  })

  it('accepts channel_data in any spelling the signature covers, taking the member from it', async () => {
    const socket = await connect()
    const channel = unique('presence-desk')
    // Spaced out and with the keys the other way round: signed as sent, so accepted as sent.
    const channelData = '{ "user_info" : { "name" : "Grace" } ,  "user_id" : "4242" }'
    const reply = await socket.subscribe(channel, sign(socket, channel, channelData), channelData)
    expect(reply.event).toBe('pusher_internal:subscription_succeeded')
    expect(reply.data).toEqual({ presence: { count: 1, ids: ['4242'], hash: { '4242': { name: 'Grace' } } } })
  })

  it('accepts a 164-character channel name and refuses a 165-character one', async () => {
    const socket = await connect()
    const longest = `market.${'a'.repeat(164 - 'market.'.length)}`
    expect(longest).toHaveLength(164)
    const ok = await socket.subscribe(longest)
    expect(ok).toMatchObject({ event: 'pusher_internal:subscription_succeeded', channel: longest })

    const tooLong = `${longest}b`
    const refused = await socket.subscribe(tooLong)
    expect(refused.event).toBe('pusher:error')
    expect(errorCode(refused)).toBe(4009)
    const tooLongPrivate = `private-${'p'.repeat(157)}`
    expect(tooLongPrivate).toHaveLength(165)
    const refusedPrivate = await socket.subscribe(tooLongPrivate, sign(socket, tooLongPrivate))
    expect(refusedPrivate.event).toBe('pusher:error')

    const witness = await subscribed(unique('witness'))
    const from = socket.mark()
    await t.app.realtime.publish([tooLong, tooLongPrivate], 'probe', {})
    await probe(longest, socket)
    expect(socket.since(from).map((f) => f.channel)).toEqual([longest])
    expect(socket.since(0, 'pusher_internal:subscription_succeeded').map((f) => f.channel)).toEqual([longest])
    expect(witness.open).toBe(true)
  })

  it('refuses channel names with characters outside [-a-zA-Z0-9_=@,.;]', async () => {
    const socket = await connect()
    const names = ['market AAPL', 'market#AAPL', 'märkt', 'a/b', 'a:b', 'a*', 'a\nb', '', 'private-a%20b']
    for (const name of names) {
      const reply = await socket.subscribe(name, name.startsWith('private-') ? sign(socket, name) : undefined)
      expect(reply.event, JSON.stringify(name)).toBe('pusher:error')
      expect(errorCode(reply), JSON.stringify(name)).toBe(4009)
    }
    const allowed = '-aZ09_=@,.;'
    expect(await socket.subscribe(allowed)).toMatchObject({
      event: 'pusher_internal:subscription_succeeded',
      channel: allowed,
    })
    expect(socket.since(0, 'pusher_internal:subscription_succeeded').map((f) => f.channel)).toEqual([allowed])
  })
})

describe('client events', () => {
  it('delivers a client event to the other sockets of a private channel, never back to the sender', async () => {
    const channel = unique('private-tabs')
    const sender = await subscribed(channel)
    const receiver = await subscribed(channel)
    const senderFrom = sender.mark()
    const receiverFrom = receiver.mark()
    sender.send('client-token-updated', { broker_account_hash: 'abc' }, channel)
    const got = await receiver.waitFor((f) => f.event === 'client-token-updated', 3000, receiverFrom)
    expect(got).toMatchObject({ channel, data: { broker_account_hash: 'abc' } })
    expect(typeof got.rawData).toBe('string')
    expect(got.user_id).toBeUndefined()
    await probe(channel, sender)
    expect(sender.since(senderFrom).map((f) => f.event)).toEqual(['probe'])
    expect(sender.since(0, 'pusher:error')).toEqual([])
  })

  it('adds the sender’s user_id to a client event on a presence channel', async () => {
    const channel = unique('presence-desk')
    const sender = await subscribed(channel, JSON.stringify({ user_id: '101', user_info: { name: 'Ada' } }))
    const receiver = await subscribed(channel, JSON.stringify({ user_id: '102', user_info: { name: 'Bob' } }))
    const from = receiver.mark()
    sender.send('client-typing', { typing: true }, channel)
    const got = await receiver.waitFor((f) => f.event === 'client-typing', 3000, from)
    expect(got).toMatchObject({ channel, data: { typing: true }, user_id: '101' })
    await probe(channel, sender)
    expect(sender.since(0, 'client-typing')).toEqual([])
  })

  it('refuses a client event on a public channel', async () => {
    const channel = unique('public-room')
    const sender = await subscribed(channel)
    const receiver = await subscribed(channel)
    const from = receiver.mark()
    const senderFrom = sender.mark()
    sender.send('client-hello', { hi: 1 }, channel)
    const error = await sender.waitFor((f) => f.event === 'pusher:error', 3000, senderFrom)
    expect(error.data).toMatchObject({ code: expect.any(Number), message: expect.any(String) })
    await probe(channel, receiver)
    expect(receiver.since(from).map((f) => f.event)).toEqual(['probe'])
  })

  it('refuses a client event on a channel the sender has not joined', async () => {
    const channel = unique('private-room')
    const receiver = await subscribed(channel)
    const outsider = await connect()
    const from = receiver.mark()
    outsider.send('client-hello', { hi: 1 }, channel)
    const error = await outsider.waitFor((f) => f.event === 'pusher:error')
    expect(error.data).toMatchObject({ code: expect.any(Number), message: expect.any(String) })
    // nor with a channel named only in the data, or none at all
    outsider.send('client-hello', { hi: 2, channel })
    await probe(channel, receiver)
    expect(receiver.since(from).map((f) => f.event)).toEqual(['probe'])
  })

  it('refuses a client event over 10 KB and delivers one under it', async () => {
    const channel = unique('private-big')
    const sender = await subscribed(channel)
    const receiver = await subscribed(channel)
    const from = receiver.mark()
    sender.send('client-big', { text: 'x'.repeat(11 * 1024) }, channel)
    const error = await sender.waitFor((f) => f.event === 'pusher:error')
    expect(error.data).toMatchObject({ code: expect.any(Number) })
    sender.send('client-small', { text: 'y'.repeat(9 * 1024) }, channel)
    const small = await receiver.waitFor((f) => f.event === 'client-small', 3000, from)
    expect(small.data.text).toHaveLength(9 * 1024)
    await probe(channel, receiver)
    expect(receiver.since(from).map((f) => f.event)).toEqual(['client-small', 'probe'])
  })

  it('passes 10 client events a second and answers the 11th with pusher:error 4301', async () => {
    const channel = unique('private-chatty')
    const sender = await subscribed(channel)
    const receiver = await subscribed(channel)
    const from = receiver.mark()
    for (let i = 1; i <= 11; i++) sender.send('client-n', { i }, channel)
    const error = await sender.waitFor((f) => f.event === 'pusher:error')
    expect(error.data).toEqual({ code: 4301, message: expect.any(String) })
    await probe(channel, receiver)
    expect(receiver.since(from, 'client-n').map((f) => f.data.i)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    // a second later the budget is back
    await new Promise((resolve) => setTimeout(resolve, 1100))
    sender.send('client-n', { i: 12 }, channel)
    await receiver.waitFor((f) => f.event === 'client-n' && f.data.i === 12)
    expect(sender.since(0, 'pusher:error')).toHaveLength(1)
  })
})

describe('frames', () => {
  it('closes a socket that sends a frame over 64 KiB with 1009, and keeps one under it', async () => {
    const under = await connect()
    const from = under.mark()
    under.send('pusher:ping', { padding: 'p'.repeat(60 * 1024) })
    await under.waitFor((f) => f.event === 'pusher:pong', 3000, from)
    expect(under.open).toBe(true)

    const over = await connect()
    over.sendRaw(JSON.stringify({ event: 'pusher:ping', data: { padding: 'p'.repeat(64 * 1024) } }))
    const closed = await closedWithin(over)
    expect(closed?.code).toBe(1009)
    expect(under.open).toBe(true)
  })
})

describe('REVERB_MAX_CONNECTIONS=2', () => {
  it('refuses the third socket with pusher:error 4004 and takes one again after a socket leaves', async () => {
    const small = await buildTestApp({
      env: { REVERB_MAX_CONNECTIONS: '2' },
      database: sharedDatabase(t.database),
    })
    extraApps.push(small)
    const first = await connect(small)
    await connect(small)
    const third = dial(small)
    const closed = await closedWithin(third)
    expect(third.frames.map((f) => f.event)).toEqual(['pusher:error'])
    expect(third.frames[0]?.data).toEqual({ code: 4004, message: expect.any(String) })
    expect(closed?.code).toBe(4004)

    first.close()
    expect(await closedWithin(first)).not.toBeNull()
    let fourth: PusherSocket | undefined
    // the server forgets the closed socket a moment after the close handshake
    for (let i = 0; i < 20 && !fourth?.open; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 50))
      fourth = dial(small)
      await Promise.race([
        fourth.waitFor((f) => f.event === 'pusher:connection_established', 1000).catch(() => {}),
        fourth.closed,
      ])
    }
    expect(fourth?.frames[0]?.event).toBe('pusher:connection_established')
  })
})

describe('REVERB_APP_ACTIVITY_TIMEOUT=1', () => {
  it('pings a silent socket, closes it with 4201 about a second later, and keeps one that answers', async () => {
    const quick = await buildTestApp({
      env: { REVERB_APP_ACTIVITY_TIMEOUT: '1' },
      database: sharedDatabase(t.database),
    })
    extraApps.push(quick)
    // autoPong off: neither answers WebSocket-level pings, only what the test sends
    const silent = await connect(quick, { autoPong: false })
    const answering = await connect(quick, { autoPong: false })
    let webSocketPings = 0
    answering.ws.on('ping', () => webSocketPings++)
    const connectedAt = Date.now()
    expect(silent.frames[0]?.data).toMatchObject({ activity_timeout: 1 })
    answering.ws.on('message', (raw) => {
      if (JSON.parse(raw.toString()).event === 'pusher:ping') answering.send('pusher:pong', {})
    })

    const ping = await silent.waitFor((f) => f.event === 'pusher:ping', 3000)
    const pingedAt = Date.now()
    expect(ping.channel).toBeUndefined()
    expect(pingedAt - connectedAt).toBeGreaterThanOrEqual(900)
    const closed = await closedWithin(silent, 4000)
    expect(closed?.code).toBe(4201)
    expect((closed?.at ?? Infinity) - pingedAt).toBeGreaterThanOrEqual(500)
    expect((closed?.at ?? Infinity) - pingedAt).toBeLessThanOrEqual(2000)

    await new Promise((resolve) => setTimeout(resolve, 1500))
    expect(answering.since(0, 'pusher:ping').length).toBeGreaterThanOrEqual(2)
    expect(answering.open).toBe(true)
    expect(answering.closedWith).toBeUndefined()
    // Each time both: the pusher:ping frame and a WebSocket ping (for proxies).
    expect(webSocketPings).toBe(answering.since(0, 'pusher:ping').length)
  })
})

describe('stopping', () => {
  it('closes every open socket with 4100 on app.close(), spread over REVERB_DRAIN_SECONDS', async () => {
    const stopping = await buildTestApp({
      env: { REVERB_DRAIN_SECONDS: '0.3' },
      database: sharedDatabase(t.database),
    })
    extraApps.push(stopping)
    const open = [await connect(stopping), await connect(stopping), await connect(stopping)]
    const started = Date.now()
    await stopping.close()
    const closes = await Promise.race([
      Promise.all(open.map((socket) => socket.closed)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('sockets left open')), 5000)),
    ])
    expect(closes.map((c) => c.code)).toEqual([4100, 4100, 4100])
    const times = closes.map((c) => c.at)
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(100)
    expect(Math.max(...times) - started).toBeLessThanOrEqual(3000)
  })
})
