import { afterAll, describe, expect, it } from 'vitest'
import type { TestApp } from '../../../test/helpers/build-test-app.ts'
import { createGroup, joinGroup, postMessage } from '../../../test/helpers/chat.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { minutes } from '../../../test/helpers/clock.ts'
import { connected, echoFor, eventually, settle } from '../../../test/helpers/echo.ts'
import { grantCredits, signedInAdmin, signedInClient } from '../../../test/helpers/factories.ts'
import { resetPasswordByMail } from '../../../test/helpers/password-reset.ts'
import { PusherSocket } from '../../../test/helpers/pusher-socket.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import { endAccessOfLapsedSessions } from './access-ends.ts'

// Channel access is checked at the auth route; these show it ending while the socket stays open, as
// the app's Echo (pusher-js) sees it: the dropped channel's `.error()`, nothing more on it, the
// user's other channels working; a blocked or deleted user's socket closed for good.

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))
const echoes: { disconnect(): void }[] = []
const sockets: PusherSocket[] = []
afterAll(() => {
  for (const echo of echoes) echo.disconnect()
  for (const socket of sockets) socket.close()
})

const ENDED = { type: 'AuthError', error: 'Access to this channel has ended.', status: 403 }
// "every instance drops those subscriptions within a second"
const WITHIN_A_SECOND = 1000

type Echo = ReturnType<typeof echoFor>

/** A browser tab of the app signed in as `client`: a connected Echo. */
async function tab(client: TestClient): Promise<Echo> {
  const echo = echoFor(t, client)
  echoes.push(echo)
  await connected(echo)
  return echo
}

/** A private channel joined through Echo: the events that reach it, its subscription's errors. */
async function follow(echo: Echo, channel: string, events: string[]) {
  const seen = { subscribed: false, errors: [] as unknown[], received: [] as [string, any][] }
  const subscription = echo
    .private(channel)
    .subscribed(() => {
      seen.subscribed = true
    })
    .error((error: unknown) => seen.errors.push(error))
  for (const name of events) subscription.listen(name, (e: unknown) => seen.received.push([name, e]))
  await eventually(() => seen.subscribed)
  return seen
}

/** A presence channel joined through Echo: who is here, who came and who left; its errors. */
async function present(echo: Echo, channel: string) {
  const seen = {
    here: [] as number[],
    joining: [] as number[],
    leaving: [] as number[],
    errors: [] as unknown[],
  }
  echo
    .join(channel)
    .here((users: { id: number }[]) => {
      seen.here = users.map((u) => u.id)
    })
    .joining((user: { id: number }) => seen.joining.push(user.id))
    .leaving((user: { id: number }) => seen.leaving.push(user.id))
    .error((error: unknown) => seen.errors.push(error))
  await eventually(() => seen.here.length > 0)
  return seen
}

/** A raw socket on `on` (the file's app unless given), closed after the file. */
async function rawSocket(on: TestApp = t): Promise<PusherSocket> {
  const socket = await PusherSocket.open(on.baseUrl, on.config.realtime.key)
  sockets.push(socket)
  return socket
}

/** What POST /api/broadcasting/auth signs for `socket` and `channel` as `client` (`{auth, channel_data?}`). */
async function signed(client: TestClient, socket: PusherSocket, channel: string) {
  const res = await client.post('/api/broadcasting/auth', {
    socket_id: socket.socketId,
    channel_name: channel,
  })
  expect(res.status).toBe(200)
  return res.data as { auth: string; channel_data?: string }
}

/** Leaves `channel` and waits until the server has read the frame (a ping after it is answered). */
async function unsubscribe(socket: PusherSocket, channel: string) {
  socket.send('pusher:unsubscribe', { channel })
  const from = socket.mark()
  socket.send('pusher:ping')
  await socket.waitFor((f) => f.event === 'pusher:pong', 3000, from)
}

const pusherOf = (echo: Echo) =>
  (echo.connector as unknown as { pusher: { connection: { state: string } } }).pusher

/** A hold placed and captured over HTTP: a notification on the user's channel, to every tab of theirs. */
async function notifyUser(client: TestClient, userId: number, order: string) {
  await grantCredits(t.database.db, userId, 10)
  expect((await client.post('/api/credit-holds', { broker_parent_order_id: order })).status).toBe(201)
}
const notified = (seen: { received: [string, any][] }, order: string) =>
  seen.received.some(([, e]) => e.broker_parent_order_id === order)
const NOTIFICATION = '.Illuminate\\Notifications\\Events\\BroadcastNotificationCreated'

/** The same user signed in on another browser (a session of its own). */
async function anotherBrowser(email: string, password: string) {
  const client = new TestClient(t.baseUrl)
  expect((await client.post('/api/login', { email, password })).status).toBe(200)
  return client
}

describe('when a member leaves a group', () => {
  it('drops their group channels (no more messages, no whisper, member_removed for the others) and keeps their own', async () => {
    const owner = await signedInClient(t, { name: 'Owner' })
    const member = await signedInClient(t, { name: 'Leaving member' })
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const ownerTab = await tab(owner.client)
    const memberTab = await tab(member.client)
    const whispers: unknown[] = []
    ownerTab.private(`chat.group.${group.id}`).listenForWhisper('typing', (e: unknown) => whispers.push(e))
    const atOwner = await present(ownerTab, `chat.group.${group.id}`)
    const groupChannel = await follow(memberTab, `chat.group.${group.id}`, ['SocketMessage'])
    const presence = await present(memberTab, `chat.group.${group.id}`)
    const own = await follow(memberTab, `App.Models.User.${member.user.id}`, ['JoinRequestResponded'])
    await eventually(() => atOwner.joining.includes(member.user.id))
    await postMessage(owner.client, group.id, 'before leaving')
    await eventually(() => groupChannel.received.length === 1)

    expect((await member.client.delete(`/api/group/${group.id}/leave`)).status).toBe(200)
    await eventually(() => groupChannel.errors.length === 1 && presence.errors.length === 1, WITHIN_A_SECOND)
    expect(groupChannel.errors).toEqual([ENDED])
    expect(presence.errors).toEqual([ENDED])
    await eventually(() => atOwner.leaving.length === 1, WITHIN_A_SECOND)
    expect(atOwner.leaving).toEqual([member.user.id])

    await postMessage(owner.client, group.id, 'after leaving')
    memberTab.private(`chat.group.${group.id}`).whisper('typing', { user: member.user.id })
    // Their own channel still works: a declined join request reaches it.
    const other = await createGroup(owner.client, { is_private: true })
    const asked = await member.client.post(`/api/group/${other.id}/join`)
    await owner.client.post(`/api/join-requests/${asked.data.data.join_request_id}/respond`, {
      action: 'decline',
    })
    await eventually(() => own.received.length === 1)
    await settle()
    expect(groupChannel.received.map(([, e]) => e.message.body)).toEqual(['before leaving'])
    expect(whispers).toEqual([])
    expect(own.errors).toEqual([])
    expect(pusherOf(memberTab).connection.state).toBe('connected')
  })

  it('refuses the old signature on that socket, and takes a new one once they are a member again', async () => {
    const owner = await signedInClient(t)
    const member = await signedInClient(t)
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const channel = `private-chat.group.${group.id}`
    const socket = await PusherSocket.open(t.baseUrl, t.config.realtime.key)
    sockets.push(socket)
    const auth = async () =>
      (
        await member.client.post('/api/broadcasting/auth', {
          socket_id: socket.socketId,
          channel_name: channel,
        })
      ).data.auth
    const signature = await auth()
    expect((await socket.subscribe(channel, signature)).event).toBe('pusher_internal:subscription_succeeded')

    const from = socket.mark()
    expect((await member.client.delete(`/api/group/${group.id}/leave`)).status).toBe(200)
    const ended = await socket.waitFor((f) => f.event === 'pusher:subscription_error', WITHIN_A_SECOND, from)
    expect(ended).toMatchObject({ channel, data: ENDED })
    expect(await socket.subscribe(channel, signature)).toMatchObject({
      event: 'pusher:error',
      data: { code: 4009 },
    })
    await postMessage(owner.client, group.id, 'not for a former member')
    await settle()
    expect(socket.since(from, 'App\\Events\\SocketMessage')).toEqual([])

    await joinGroup(member.client, group.id)
    expect((await socket.subscribe(channel, await auth())).event).toBe(
      'pusher_internal:subscription_succeeded',
    )
    await postMessage(owner.client, group.id, 'welcome back')
    await socket.waitFor(
      (f) => f.event === 'App\\Events\\SocketMessage' && f.data.message.body === 'welcome back',
    )
  })
})

describe('a channel the socket left', () => {
  it('ends with the membership too: its old signature does not join it again after the member leaves', async () => {
    const owner = await signedInClient(t)
    const member = await signedInClient(t)
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const channel = `private-chat.group.${group.id}`
    const socket = await rawSocket()
    const { auth } = await signed(member.client, socket, channel)
    expect((await socket.subscribe(channel, auth)).event).toBe('pusher_internal:subscription_succeeded')
    await unsubscribe(socket, channel)

    expect((await member.client.delete(`/api/group/${group.id}/leave`)).status).toBe(200)
    const from = socket.mark()
    expect(await socket.subscribe(channel, auth)).toMatchObject({
      event: 'pusher:error',
      data: { code: 4009 },
    })
    await postMessage(owner.client, group.id, 'not for a former member')
    await settle()
    expect(socket.since(from, 'App\\Events\\SocketMessage')).toEqual([])
  })

  it('ends with its session too: after a password change from another device its old signature is refused', async () => {
    const { user, password, client: mine } = await signedInClient(t)
    const theirs = await anotherBrowser(user.email, password)
    const channel = `private-App.Models.User.${user.id}`
    const socket = await rawSocket()
    const { auth } = await signed(theirs, socket, channel)
    expect((await socket.subscribe(channel, auth)).event).toBe('pusher_internal:subscription_succeeded')
    await unsubscribe(socket, channel)

    const changed = await mine.put('/api/user-profile/password', {
      current_password: password,
      password: 'another long secret',
      password_confirmation: 'another long secret',
    })
    expect(changed.status).toBe(200)
    const from = socket.mark()
    expect(await socket.subscribe(channel, auth)).toMatchObject({
      event: 'pusher:error',
      data: { code: 4009 },
    })
    await notifyUser(mine, user.id, 'after-change')
    await settle()
    expect(socket.since(from, NOTIFICATION.slice(1))).toEqual([])
  })
})

describe('when a group is deleted', () => {
  it('tells its members GroupDeleted, then drops their subscriptions', async () => {
    const owner = await signedInClient(t)
    const member = await signedInClient(t)
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const memberTab = await tab(member.client)
    const order: string[] = []
    const seen = await follow(memberTab, `chat.group.${group.id}`, ['GroupDeleted'])
    memberTab.private(`chat.group.${group.id}`).error(() => order.push('error'))
    memberTab.private(`chat.group.${group.id}`).listen('GroupDeleted', () => order.push('GroupDeleted'))

    expect((await owner.client.delete(`/api/group/${group.id}`)).status).toBe(200)
    await eventually(() => seen.errors.length === 1, WITHIN_A_SECOND)
    expect(seen.errors).toEqual([ENDED])
    expect(order).toEqual(['GroupDeleted', 'error'])
  })
})

describe('when sessions end', () => {
  it('a password change drops what the other sessions authorized and keeps the changer’s', async () => {
    const { user, password, client: mine } = await signedInClient(t)
    const theirs = await anotherBrowser(user.email, password)
    const myTab = await follow(await tab(mine), `App.Models.User.${user.id}`, [NOTIFICATION])
    const theirTab = await follow(await tab(theirs), `App.Models.User.${user.id}`, [NOTIFICATION])

    const changed = await mine.put('/api/user-profile/password', {
      current_password: password,
      password: 'another long secret',
      password_confirmation: 'another long secret',
    })
    expect(changed.status).toBe(200)
    await eventually(() => theirTab.errors.length === 1, WITHIN_A_SECOND)
    expect(theirTab.errors).toEqual([ENDED])
    await notifyUser(mine, user.id, 'after-change')
    await eventually(() => notified(myTab, 'after-change'))
    await settle()
    expect(notified(theirTab, 'after-change')).toBe(false)
    expect(myTab.errors).toEqual([])
  })

  it('logout drops what its session authorized; "log out other browser sessions" what the others did', async () => {
    const { user, password, client: mine } = await signedInClient(t)
    const leaving = await anotherBrowser(user.email, password)
    const other = await anotherBrowser(user.email, password)
    const myTab = await follow(await tab(mine), `App.Models.User.${user.id}`, [NOTIFICATION])
    const leavingTab = await follow(await tab(leaving), `App.Models.User.${user.id}`, [NOTIFICATION])
    const otherTab = await follow(await tab(other), `App.Models.User.${user.id}`, [NOTIFICATION])

    expect((await leaving.post('/api/logout')).status).toBe(204)
    await eventually(() => leavingTab.errors.length === 1, WITHIN_A_SECOND)
    await settle()
    expect([myTab.errors, otherTab.errors]).toEqual([[], []])

    expect((await mine.post('/api/user-profile/logout-other-sessions', { password })).status).toBe(200)
    await eventually(() => otherTab.errors.length === 1, WITHIN_A_SECOND)
    await notifyUser(mine, user.id, 'after-logouts')
    await eventually(() => notified(myTab, 'after-logouts'))
    await settle()
    expect(myTab.errors).toEqual([])
    expect(notified(leavingTab, 'after-logouts') || notified(otherTab, 'after-logouts')).toBe(false)
  })

  it('after a logout, the socket is nobody’s: the next user signed in on that tab may use it', async () => {
    const ada = await signedInClient(t)
    const bob = await signedInClient(t)
    const socket = await rawSocket()
    const adas = `private-App.Models.User.${ada.user.id}`
    await socket.subscribe(adas, (await signed(ada.client, socket, adas)).auth)
    const from = socket.mark()
    expect((await ada.client.post('/api/logout')).status).toBe(204)
    await socket.waitFor((f) => f.event === 'pusher:subscription_error', WITHIN_A_SECOND, from)

    const bobs = `private-App.Models.User.${bob.user.id}`
    const reply = await socket.subscribe(bobs, (await signed(bob.client, socket, bobs)).auth)
    expect(reply.event).toBe('pusher_internal:subscription_succeeded')
    // Ada's grant ended with her session: it is not hers to take back.
    const again = await ada.client.post('/api/login', { email: ada.user.email, password: ada.password })
    expect(again.status).toBe(200)
    const refused = await ada.client.post('/api/broadcasting/auth', {
      socket_id: socket.socketId,
      channel_name: adas,
    })
    expect(refused.status).toBe(403)
  })

  it('a password reset drops what every session authorized', async () => {
    const { user, client } = await signedInClient(t)
    const seen = await follow(await tab(client), `App.Models.User.${user.id}`, [NOTIFICATION])
    const reset = await resetPasswordByMail(t, sink, user.email, 'a reset long secret')
    expect(reset.status).toBe(200)
    await eventually(() => seen.errors.length === 1, WITHIN_A_SECOND)
    expect(seen.errors).toEqual([ENDED])
  })
})

describe('when a user is locked out', () => {
  it('closes a blocked user’s sockets with 4009 (pusher-js does not reconnect) and tells the group they left', async () => {
    const admin = await signedInAdmin(t)
    const owner = await signedInClient(t)
    const member = await signedInClient(t)
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const atOwner = await present(await tab(owner.client), `chat.group.${group.id}`)
    const memberTab = await tab(member.client)
    await follow(memberTab, `App.Models.User.${member.user.id}`, [])
    await present(memberTab, `chat.group.${group.id}`)
    const socket = await PusherSocket.open(t.baseUrl, t.config.realtime.key)
    sockets.push(socket)
    const channel = `private-App.Models.User.${member.user.id}`
    const { data } = await member.client.post('/api/broadcasting/auth', {
      socket_id: socket.socketId,
      channel_name: channel,
    })
    await socket.subscribe(channel, data.auth)
    await eventually(() => atOwner.joining.includes(member.user.id))

    expect((await admin.client.post(`/api/user/block-unblock/${member.user.id}`)).status).toBe(200)
    const closed = await Promise.race([socket.closed, settle(WITHIN_A_SECOND).then(() => null)])
    expect(closed).toMatchObject({ code: 4009 })
    await eventually(() => pusherOf(memberTab).connection.state === 'disconnected', WITHIN_A_SECOND)
    await eventually(() => atOwner.leaving.length === 1, WITHIN_A_SECOND)
    expect(atOwner.leaving).toEqual([member.user.id])
    await settle(1500)
    expect(pusherOf(memberTab).connection.state).toBe('disconnected')
  })

  it('closes the sockets of an account its owner deleted', async () => {
    const { user, password, client } = await signedInClient(t)
    const socket = await PusherSocket.open(t.baseUrl, t.config.realtime.key)
    sockets.push(socket)
    const channel = `private-App.Models.User.${user.id}`
    const { data } = await client.post('/api/broadcasting/auth', {
      socket_id: socket.socketId,
      channel_name: channel,
    })
    await socket.subscribe(channel, data.auth)

    expect((await client.delete('/api/user-profile', { password })).status).toBe(200)
    const closed = await Promise.race([socket.closed, settle(WITHIN_A_SECOND).then(() => null)])
    expect(closed).toMatchObject({ code: 4009 })
  })
})

describe('when a session merely expires', () => {
  // An app of its own: these move its clock by hours.
  const e = appUnderTest()
  const ended = (socket: PusherSocket, from: number) =>
    socket
      .since(from, 'pusher:subscription_error')
      .map((f) => [f.channel, f.data])
      .sort()

  it('its sockets lose their private and presence channels at the next check; a live session keeps its own', async () => {
    const owner = await signedInClient(e)
    const member = await signedInClient(e)
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const socket = await rawSocket(e)
    const channels = [
      `private-App.Models.User.${member.user.id}`,
      `private-chat.group.${group.id}`,
      `presence-chat.group.${group.id}`,
    ]
    const signatures = new Map<string, { auth: string; channel_data?: string }>()
    for (const channel of channels) {
      const signature = await signed(member.client, socket, channel)
      signatures.set(channel, signature)
      const reply = await socket.subscribe(channel, signature.auth, signature.channel_data)
      expect(reply.event).toBe('pusher_internal:subscription_succeeded')
    }
    // Idle past the lifetime: the member's session is over. The owner signs in anew (a live session).
    const from = socket.mark()
    e.clock.advance(minutes(e.config.session.lifetimeMinutes + 1))
    const ownerAgain = new TestClient(e.baseUrl)
    expect(
      (await ownerAgain.post('/api/login', { email: owner.user.email, password: owner.password })).status,
    ).toBe(200)
    const ownerSocket = await rawSocket(e)
    const ownChannel = `private-App.Models.User.${owner.user.id}`
    await ownerSocket.subscribe(ownChannel, (await signed(ownerAgain, ownerSocket, ownChannel)).auth)

    const ownerFrom = ownerSocket.mark()
    await endAccessOfLapsedSessions(e.app)
    await eventually(() => ended(socket, from).length === 3, WITHIN_A_SECOND)
    expect(ended(socket, from)).toEqual(channels.map((channel) => [channel, ENDED]).sort())
    const groupChannel = `private-chat.group.${group.id}`
    expect(await socket.subscribe(groupChannel, signatures.get(groupChannel)?.auth)).toMatchObject({
      event: 'pusher:error',
      data: { code: 4009 },
    })
    await postMessage(ownerAgain, group.id, 'after the member’s session expired')
    await settle()
    expect(socket.since(from, 'App\\Events\\SocketMessage')).toEqual([])
    expect(ownerSocket.since(ownerFrom, 'pusher:subscription_error')).toEqual([])
  })

  it('a session kept in use keeps its channels until its absolute lifetime ends it', async () => {
    const { user, client } = await signedInClient(e)
    const socket = await rawSocket(e)
    const channel = `private-App.Models.User.${user.id}`
    await socket.subscribe(channel, (await signed(client, socket, channel)).auth)
    const from = socket.mark()
    let steps = 0
    // A request every lifetime less ten minutes keeps it from idling out.
    while ((await client.get('/api/user')).status === 200) {
      await endAccessOfLapsedSessions(e.app)
      e.clock.advance(minutes(e.config.session.lifetimeMinutes - 10))
      steps += 1
    }
    expect(steps).toBeGreaterThan(1)
    expect(ended(socket, from)).toEqual([])
    await endAccessOfLapsedSessions(e.app)
    await eventually(() => ended(socket, from).length === 1, WITHIN_A_SECOND)
    expect(ended(socket, from)).toEqual([[channel, ENDED]])
  })
})
