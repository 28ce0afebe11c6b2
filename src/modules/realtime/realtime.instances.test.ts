import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, TEST_APP_KEY, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { createGroup, joinGroup } from '../../../test/helpers/chat.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { connected, echoFor, eventually, settle } from '../../../test/helpers/echo.ts'
import { createUser, grantCredits, signedInAdmin, signedInClient } from '../../../test/helpers/factories.ts'
import { PusherSocket } from '../../../test/helpers/pusher-socket.ts'
import {
  killServerProcesses,
  removeTempDirs,
  type ServerProcess,
  startServerProcess,
} from '../../../test/helpers/server-process.ts'
import {
  createServerDatabase,
  type ServerDatabase,
  sharedDatabase,
} from '../../../test/helpers/test-database.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { type Database, openDatabase } from '../../db/client.ts'

// Several instances behind a load balancer share one database and one Redis: an event published on
// any of them reaches the sockets of every one, presence lists are shared, and an instance that
// dies without a word has its members removed once its records expire.

const redisUrl = process.env.TEST_REDIS_URL
const postgresUrl = process.env.TEST_DATABASE_URL

/** The REVERB_* every instance shares (the app's VITE_REVERB_* point at any of them). */
const reverbEnv = () => ({
  REVERB_APP_ID: `app-${randomBytes(3).toString('hex')}`,
  REVERB_APP_KEY: `key-${randomBytes(8).toString('hex')}`,
  REVERB_APP_SECRET: randomBytes(24).toString('hex'),
})

interface Endpoint {
  baseUrl: string
  key: string
}

/** A user signed in through the given instance (created in the shared database). */
async function signedInAt(database: Database, baseUrl: string, name: string) {
  const { user, password } = await createUser(database.db, { name })
  const client = new TestClient(baseUrl)
  const res = await client.post('/api/login', { email: user.email, password })
  if (res.status !== 200) throw new Error(`login through ${baseUrl} answered ${res.status} ${res.text}`)
  return { user, client }
}

/**
 * A raw socket on an instance, subscribed to each channel with the signature that instance's
 * POST /api/broadcasting/auth gives the client (and its channel_data on presence channels).
 */
async function socketOn(at: Endpoint, client: TestClient, channels: string[]): Promise<PusherSocket> {
  const socket = await PusherSocket.open(at.baseUrl, at.key)
  for (const channel of channels) {
    const res = await client.post('/api/broadcasting/auth', {
      socket_id: socket.socketId,
      channel_name: channel,
    })
    if (res.status !== 200) throw new Error(`auth for ${channel} answered ${res.status} ${res.text}`)
    const reply = await socket.subscribe(channel, res.data.auth, res.data.channel_data)
    if (reply.event !== 'pusher_internal:subscription_succeeded') {
      throw new Error(`subscribe ${channel} answered ${JSON.stringify(reply)}`)
    }
  }
  return socket
}

/** Echo's presence callbacks, recorded. */
function watchPresence(echo: ReturnType<typeof echoFor>, channel: string) {
  const seen = {
    here: undefined as { id: number; name: string }[] | undefined,
    joining: [] as number[],
    leaving: [] as number[],
  }
  echo
    .join(channel)
    .here((users: { id: number; name: string }[]) => {
      seen.here = users
    })
    .joining((user: { id: number }) => seen.joining.push(user.id))
    .leaving((user: { id: number }) => seen.leaving.push(user.id))
  return seen
}

// Every run: the single-instance side of a crash, a connection that drops without a close frame.
describe('real-time on one instance without Redis', () => {
  const t = appUnderTest()
  const echoes: { disconnect(): void }[] = []
  afterAll(() => {
    for (const echo of echoes) echo.disconnect()
  })

  it('removes a member whose connection drops without a close frame, and says they are offline', async () => {
    const ada = await signedInClient(t, { name: 'Ada' })
    const bob = await signedInClient(t, { name: 'Bob' })
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const channel = `presence-chat.group.${group.id}`
    const status = async () => (await ada.client.get(`/api/user/${bob.user.id}/status`)).data.data
    const bobSocket = await socketOn({ baseUrl: t.baseUrl, key: t.config.realtime.key }, bob.client, [
      `private-App.Models.User.${bob.user.id}`,
      channel,
    ])
    expect(await status()).toMatchObject({ online: true })
    const echo = echoFor(t, ada.client)
    echoes.push(echo)
    await connected(echo)
    const seen = watchPresence(echo, `chat.group.${group.id}`)
    expect((await eventually(() => seen.here)).map((u) => u.id)).toContain(bob.user.id)

    bobSocket.terminate()
    await eventually(() => seen.leaving.length > 0, 2000).catch(() => {})
    expect(seen.leaving).toEqual([bob.user.id])
    expect(await status()).toEqual({
      id: bob.user.id,
      online: false,
      last_seen_at: expect.stringMatching(/Z$/),
    })
  })
})

// Joins the run when it has a Redis (CI's PostgreSQL+Redis run), as the other shared-state tests do.
describe.each(redisUrl ? ['redis'] : [])('real-time on two in-process instances sharing %s', () => {
  let a: TestApp
  let b: TestApp
  let cleaner: Redis
  const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
  const connect = () => new Redis(redisUrl ?? '', { keyPrefix })
  const echoes: { disconnect(): void }[] = []
  const sockets: PusherSocket[] = []

  beforeAll(async () => {
    // The periodic sweep that catches members nobody announced (an instance's records expiring) runs
    // every min(activity timeout, TTL)/4: pushed out to 30 s here, so only the announcements
    // themselves can tell A of a member who left.
    const env = { ...reverbEnv(), REVERB_APP_ACTIVITY_TIMEOUT: '120', REVERB_INSTANCE_TTL_SECONDS: '600' }
    a = await buildTestApp({ redis: connect(), env })
    b = await buildTestApp({
      redis: connect(),
      env: { ...env, REVERB_DRAIN_SECONDS: '0.1' },
      database: sharedDatabase(a.database),
    })
    cleaner = connect()
  })
  afterAll(async () => {
    for (const echo of echoes) echo.disconnect()
    for (const socket of sockets) socket.close()
    await b?.close().catch(() => {})
    await a?.close()
    const keys = await cleaner.keys(`${keyPrefix}*`)
    if (keys.length > 0) await cleaner.del(...keys.map((key) => key.slice(keyPrefix.length)))
    await cleaner.quit()
  })

  const endpoint = (t: TestApp): Endpoint => ({ baseUrl: t.baseUrl, key: t.config.realtime.key })

  it('delivers to a socket on A the SocketMessage of a message posted through B', async () => {
    const ada = await signedInClient(a, { name: 'Ada on A' })
    const bob = await signedInAt(a.database, b.baseUrl, 'Bob on B')
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const echo = echoFor(a, ada.client)
    echoes.push(echo)
    await connected(echo)
    const received: { message: { id: number; body: string; user_id?: number } }[] = []
    let subscribed = false
    echo
      .private(`chat.group.${group.id}`)
      .subscribed(() => {
        subscribed = true
      })
      .listen('SocketMessage', (e: (typeof received)[number]) => received.push(e))
    await eventually(() => subscribed)

    const posted = await bob.client.post('/api/message', { group_id: group.id, body: 'posted through B' })
    expect(posted.status).toBe(201)
    const event = await eventually(() => received.find((e) => e.message.body === 'posted through B'))
    expect(event.message).toMatchObject({ id: posted.data.data.id, group_id: group.id })
    expect(received).toHaveLength(1)
  })

  it('lists on A a presence member connected to B, announces one who joins on B, and their leaving', async () => {
    const ada = await signedInClient(a, { name: 'Ada on A' })
    const bob = await signedInAt(a.database, b.baseUrl, 'Bob on B')
    const cy = await signedInAt(a.database, b.baseUrl, 'Cy on B')
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    await joinGroup(cy.client, group.id)
    const channel = `presence-chat.group.${group.id}`
    const bobSocket = await socketOn(endpoint(b), bob.client, [channel])
    sockets.push(bobSocket)

    const echo = echoFor(a, ada.client)
    echoes.push(echo)
    await connected(echo)
    const seen = watchPresence(echo, `chat.group.${group.id}`)
    const here = await eventually(() => seen.here)
    expect(here.map((u) => u.id).sort((x, y) => x - y)).toEqual(
      [ada.user.id, bob.user.id].sort((x, y) => x - y),
    )
    expect(here.find((u) => u.id === bob.user.id)).toEqual({
      id: bob.user.id,
      name: 'Bob on B',
      profile_photo_url: null,
    })

    const cySocket = await socketOn(endpoint(b), cy.client, [channel])
    sockets.push(cySocket)
    await eventually(() => seen.joining.length > 0)
    expect(seen.joining).toEqual([cy.user.id])

    // A socket closed cleanly on B: announced at once, not after the records expire.
    cySocket.close()
    await eventually(() => seen.leaving.length > 0, 2000)
    expect(seen.leaving).toEqual([cy.user.id])
  })

  it('ends on B, within a second, the group channels of a member who leaves through A; their own channel goes on', async () => {
    const ada = await signedInClient(a, { name: 'Ada on A' })
    // Bob's requests go to A, his socket to B, as a balancer may send them.
    const bob = await signedInClient(a, { name: 'Bob, socket on B' })
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const adaEcho = echoFor(a, ada.client)
    const bobEcho = echoFor(b, bob.client)
    echoes.push(adaEcho, bobEcho)
    await connected(adaEcho)
    await connected(bobEcho)
    const seen = watchPresence(adaEcho, `chat.group.${group.id}`)
    await eventually(() => seen.here)
    const errors: unknown[] = []
    const messages: string[] = []
    const notifications: string[] = []
    let subscribed = 0
    const onSubscribed = () => {
      subscribed += 1
    }
    bobEcho
      .private(`chat.group.${group.id}`)
      .subscribed(onSubscribed)
      .error((error: unknown) => errors.push(error))
      .listen('SocketMessage', (e: { message: { body: string } }) => messages.push(e.message.body))
    bobEcho
      .join(`chat.group.${group.id}`)
      .here(onSubscribed)
      .error((error: unknown) => errors.push(error))
    bobEcho
      .private(`App.Models.User.${bob.user.id}`)
      .subscribed(onSubscribed)
      .notification((n: { broker_parent_order_id: string }) => notifications.push(n.broker_parent_order_id))
    await eventually(() => subscribed === 3 && seen.joining.includes(bob.user.id))

    expect((await bob.client.delete(`/api/group/${group.id}/leave`)).status).toBe(200)
    const leftAt = Date.now()
    await eventually(() => errors.length === 2, 1000)
    expect(Date.now() - leftAt).toBeLessThan(1000)
    expect(errors).toEqual([
      { type: 'AuthError', error: 'Access to this channel has ended.', status: 403 },
      { type: 'AuthError', error: 'Access to this channel has ended.', status: 403 },
    ])
    await eventually(() => seen.leaving.includes(bob.user.id), 1000)

    await ada.client.post('/api/message', { group_id: group.id, body: 'after Bob left' })
    await grantCredits(a.database.db, bob.user.id, 10)
    expect((await bob.client.post('/api/credit-holds', { broker_parent_order_id: 'on-b' })).status).toBe(201)
    await eventually(() => notifications.includes('on-b'))
    expect(messages).toEqual([])
  })

  it('ends on B a channel the socket had left when its member leaves through A: the old signature is refused', async () => {
    const ada = await signedInClient(a, { name: 'Ada on A' })
    const bob = await signedInClient(a, { name: 'Bob, socket on B' })
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const channel = `private-chat.group.${group.id}`
    const probe = `probe.${randomBytes(4).toString('hex')}`
    const socket = await socketOn(endpoint(b), bob.client, [channel])
    sockets.push(socket)
    await socket.subscribe(probe)
    const signature = (
      await bob.client.post('/api/broadcasting/auth', { socket_id: socket.socketId, channel_name: channel })
    ).data.auth
    socket.send('pusher:unsubscribe', { channel })
    const pong = socket.mark()
    socket.send('pusher:ping')
    await socket.waitFor((f) => f.event === 'pusher:pong', 3000, pong)

    expect((await bob.client.delete(`/api/group/${group.id}/leave`)).status).toBe(200)
    // Notices and deliveries keep one order: once this probe reached B's socket, so had the end.
    await a.app.realtime.publish([probe], 'probe', {})
    await socket.waitFor((f) => f.event === 'probe')
    expect(await socket.subscribe(channel, signature)).toMatchObject({
      event: 'pusher:error',
      data: { code: 4009 },
    })
  })

  it('refuses on B (403) to sign a channel for a socket on A that another user was granted', async () => {
    const ada = await signedInClient(a, { name: 'Ada on A' })
    const bob = await signedInAt(a.database, b.baseUrl, 'Bob on B')
    const adaSocket = await socketOn(endpoint(a), ada.client, [`private-App.Models.User.${ada.user.id}`])
    sockets.push(adaSocket)
    const bobAsks = () =>
      bob.client.post('/api/broadcasting/auth', {
        socket_id: adaSocket.socketId,
        channel_name: `private-App.Models.User.${bob.user.id}`,
      })
    // A records the socket's user in Redis as it records Ada's grant, a moment after her answer.
    await eventually(async () => (await bobAsks()).status === 403)
    expect((await bobAsks()).data).toEqual({ message: 'This action is unauthorized.' })
  })

  it('ignores an X-Socket-Id given to B that names another user’s socket on A: it still gets the broadcast', async () => {
    const ada = await signedInClient(a, { name: 'Ada on A' })
    const bob = await signedInAt(a.database, b.baseUrl, 'Bob on B')
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const adaSocket = await socketOn(endpoint(a), ada.client, [`private-chat.group.${group.id}`])
    sockets.push(adaSocket)
    const posted = await bob.client.post(
      '/api/message',
      { group_id: group.id, body: 'Bob names Ada’s socket' },
      { headers: { 'x-socket-id': adaSocket.socketId } },
    )
    expect(posted.status).toBe(201)
    await adaSocket.waitFor(
      (f) => f.event === 'App\\Events\\SocketMessage' && f.data.message.body === 'Bob names Ada’s socket',
    )
  })

  it('closes on B (4009, no reconnect) the sockets of a user an admin blocks through A', async () => {
    const admin = await signedInAdmin(a)
    const cy = await signedInAt(a.database, b.baseUrl, 'Cy on B')
    const cyEcho = echoFor(b, cy.client)
    echoes.push(cyEcho)
    await connected(cyEcho)
    let subscribed = false
    cyEcho.private(`App.Models.User.${cy.user.id}`).subscribed(() => {
      subscribed = true
    })
    const cySocket = await socketOn(endpoint(b), cy.client, [`private-App.Models.User.${cy.user.id}`])
    sockets.push(cySocket)
    await eventually(() => subscribed)

    expect((await admin.client.post(`/api/user/block-unblock/${cy.user.id}`)).status).toBe(200)
    const closed = await Promise.race([cySocket.closed, settle(1000).then(() => null)])
    expect(closed).toMatchObject({ code: 4009 })
    const pusher = (cyEcho.connector as unknown as { pusher: { connection: { state: string } } }).pusher
    await eventually(() => pusher.connection.state === 'disconnected', 1000)
    await settle(1500)
    expect(pusher.connection.state).toBe('disconnected')
  })

  it('shows on A a user online while their socket is on B, and offline once B stops cleanly', async () => {
    const ada = await signedInClient(a, { name: 'Ada on A' })
    const bob = await signedInAt(a.database, b.baseUrl, 'Bob on B')
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const channel = `presence-chat.group.${group.id}`
    const status = async () => (await ada.client.get(`/api/user/${bob.user.id}/status`)).data.data
    expect(await status()).toMatchObject({ online: false })

    // as the app's tab: the user's own channel, the group's private channel, its presence channel
    const bobSocket = await socketOn(endpoint(b), bob.client, [
      `private-App.Models.User.${bob.user.id}`,
      `private-chat.group.${group.id}`,
      channel,
    ])
    sockets.push(bobSocket)
    expect(await status()).toMatchObject({ online: true })
    const echo = echoFor(a, ada.client)
    echoes.push(echo)
    await connected(echo)
    const seen = watchPresence(echo, `chat.group.${group.id}`)
    expect((await eventually(() => seen.here)).map((u) => u.id)).toContain(bob.user.id)

    // B drains (its sockets get 41xx), announcing that its members left and removing its records on
    // the way out: A hears of it at once, not at its next sweep.
    await b.close()
    const closed = await Promise.race([
      bobSocket.closed,
      new Promise<null>((r) => setTimeout(() => r(null), 3000)),
    ])
    expect(closed?.code).toBe(4100)
    await eventually(() => seen.leaving.length > 0, 2000).catch(() => {})
    expect(seen.leaving).toEqual([bob.user.id])
    expect(await status()).toMatchObject({ online: false })
  })
})

// B must be a real process to die without a word (SIGKILL): it needs the PostgreSQL database the
// test uses too, so this runs only in the PostgreSQL+Redis run.
const crashCases = redisUrl && postgresUrl ? [{ redisUrl, postgresUrl }] : []

describe.each(crashCases)('real-time when instance B (a process) is killed', ({ redisUrl, postgresUrl }) => {
  const TTL_SECONDS = 2
  // A's sweep runs every TTL/4; Redis expires B's records TTL after B's last heartbeat (at most TTL/4 before
  // the kill); A announces them after they were missing for its grace (TTL/4 + 1 s: plugins/realtime.ts);
  // and a moment for the frame. Generous for a loaded CI machine, still well under the 30 s default.
  const REMOVAL_DEADLINE_MS = TTL_SECONDS * 1000 + (TTL_SECONDS * 250 + 1000) + 2500
  const env = reverbEnv()
  let serverDatabase: ServerDatabase
  let database: Database
  // Both instances (B through REDIS_PREFIX) keep to keys and channels of their own on the shared Redis.
  const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
  let cleaner: Redis | undefined
  let a: TestApp
  let b: ServerProcess
  const echoes: { disconnect(): void }[] = []
  const sockets: PusherSocket[] = []

  beforeAll(async () => {
    serverDatabase = await createServerDatabase(postgresUrl)
    database = await openDatabase({ url: serverDatabase.url })
    await database.migrate()
    cleaner = new Redis(redisUrl)
    a = await buildTestApp({
      env: { ...env, REVERB_INSTANCE_TTL_SECONDS: String(TTL_SECONDS) },
      database: sharedDatabase(database),
      redis: new Redis(redisUrl, { keyPrefix }),
    })
    b = await startServerProcess({
      name: 'B',
      env: {
        LOG_LEVEL: 'warn',
        DATABASE_URL: serverDatabase.url,
        REDIS_URL: redisUrl,
        REDIS_PREFIX: keyPrefix,
        APP_KEY: TEST_APP_KEY,
        ...env,
        REVERB_INSTANCE_TTL_SECONDS: String(TTL_SECONDS),
      },
    })
  }, 120_000)

  afterAll(async () => {
    for (const echo of echoes) echo.disconnect()
    for (const socket of sockets) socket.close()
    await killServerProcesses()
    await a?.close()
    if (cleaner) {
      const keys = await cleaner.keys(`${keyPrefix}*`)
      if (keys.length > 0) await cleaner.del(...keys)
      await cleaner.quit()
    }
    await database?.close()
    await serverDatabase?.drop()
    removeTempDirs()
  })

  it('delivers events across, lists B’s member on A, and removes them within the expiry once B is killed', async () => {
    const onB: Endpoint = { baseUrl: b.baseUrl, key: env.REVERB_APP_KEY }
    const ada = await signedInAt(database, a.baseUrl, 'Ada on A')
    const bob = await signedInAt(database, b.baseUrl, 'Bob on B')
    const cy = await signedInAt(database, b.baseUrl, 'Cy on B')
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    await joinGroup(cy.client, group.id)
    const presenceChannel = `presence-chat.group.${group.id}`
    const status = async (id: number) => (await ada.client.get(`/api/user/${id}/status`)).data.data

    const bobSocket = await socketOn(onB, bob.client, [
      `private-App.Models.User.${bob.user.id}`,
      presenceChannel,
    ])
    sockets.push(bobSocket)
    expect(await status(bob.user.id)).toMatchObject({ online: true })

    const echo = echoFor(a, ada.client)
    echoes.push(echo)
    await connected(echo)
    const messages: string[] = []
    let subscribed = false
    echo
      .private(`chat.group.${group.id}`)
      .subscribed(() => {
        subscribed = true
      })
      .listen('SocketMessage', (e: { message: { body: string } }) => messages.push(e.message.body))
    const seen = watchPresence(echo, `chat.group.${group.id}`)
    await eventually(() => subscribed)

    // an event of a request made to B reaches the socket on A
    const posted = await bob.client.post('/api/message', { group_id: group.id, body: 'from the B process' })
    expect(posted.status).toBe(201)
    await eventually(() => messages.includes('from the B process'))

    // presence on A lists Bob, whose socket is on B, and announces Cy joining on B
    const here = await eventually(() => seen.here)
    expect(here.map((u) => u.id).sort((x, y) => x - y)).toEqual(
      [ada.user.id, bob.user.id].sort((x, y) => x - y),
    )
    const cySocket = await socketOn(onB, cy.client, [presenceChannel])
    sockets.push(cySocket)
    await eventually(() => seen.joining.length > 0)
    expect(seen.joining).toEqual([cy.user.id])

    // B dies without closing anything: its members go once its records expire
    await b.kill()
    const killedAt = Date.now()
    await eventually(() => seen.leaving.length === 2, REMOVAL_DEADLINE_MS).catch(() => {})
    const removedAfter = Date.now() - killedAt
    expect(seen.leaving.sort((x, y) => x - y)).toEqual([bob.user.id, cy.user.id].sort((x, y) => x - y))
    expect(removedAfter).toBeLessThanOrEqual(REMOVAL_DEADLINE_MS)
    expect(await status(bob.user.id)).toMatchObject({ online: false })

    // and A goes on serving its own sockets
    const again = await ada.client.post('/api/message', { group_id: group.id, body: 'through A, after' })
    expect(again.status).toBe(201)
    await eventually(() => messages.includes('through A, after'))
  })
})
