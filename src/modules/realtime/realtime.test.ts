import PusherServer from 'pusher'
import { afterAll, describe, expect, it } from 'vitest'
import { createGroup, joinGroup, postMessage } from '../../../test/helpers/chat.ts'
import type { TestClient } from '../../../test/helpers/client.ts'
import { connected, echoFor, eventually, settle } from '../../../test/helpers/echo.ts'
import { grantCredits, signedInClient } from '../../../test/helpers/factories.ts'
import { PusherSocket } from '../../../test/helpers/pusher-socket.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'

const t = appUnderTest()
const echoes: { disconnect(): void }[] = []
const sockets: PusherSocket[] = []
afterAll(() => {
  for (const echo of echoes) echo.disconnect()
  for (const socket of sockets) socket.close()
})

/** A signed-in user with a connected Echo, as a browser tab of the app. */
async function tab(existing?: Awaited<ReturnType<typeof signedInClient>>) {
  const person =
    existing ?? (await signedInClient(t, { name: `Trader ${Math.random().toString(36).slice(2, 7)}` }))
  const echo = echoFor(t, person.client)
  echoes.push(echo)
  const socketId = await connected(echo)
  return { ...person, echo, socketId }
}

describe('Laravel Echo over pusher-js against this server', () => {
  it('delivers a chat message posted over HTTP to the group channel as SocketMessage', async () => {
    const owner = await tab()
    const member = await tab()
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const received: { message: { body: string } }[] = []
    member.echo
      .private(`chat.group.${group.id}`)
      .listen('SocketMessage', (e: { message: { body: string } }) => {
        received.push(e)
      })
    await settle()
    const posted = await postMessage(owner.client, group.id, 'Breaking out above 200')
    const event = await eventually(() => received.find((e) => e.message.body === 'Breaking out above 200'))
    expect(event.message).toMatchObject({ id: posted.id, group_id: group.id, kind: 'user' })
  })

  it('broadcasts MessageDeleted, UserLeftGroup and GroupDeleted to the group, JoinRequestResponded to the requester', async () => {
    const owner = await tab()
    const member = await tab()
    const requester = await tab()
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    const events: [string, unknown][] = []
    const channel = owner.echo.private(`chat.group.${group.id}`)
    for (const name of ['MessageDeleted', 'UserLeftGroup', 'GroupDeleted']) {
      channel.listen(name, (e: unknown) => events.push([name, e]))
    }
    const answers: unknown[] = []
    requester.echo
      .private(`App.Models.User.${requester.user.id}`)
      .listen('JoinRequestResponded', (e: unknown) => answers.push(e))
    await settle()

    const message = await postMessage(member.client, group.id, 'to be deleted')
    expect((await member.client.delete(`/api/message/${message.id}`)).status).toBe(200)
    expect((await member.client.delete(`/api/group/${group.id}/leave`)).status).toBe(200)
    expect((await owner.client.put(`/api/group/${group.id}`, { is_private: true })).status).toBe(200)
    const join = await requester.client.post(`/api/group/${group.id}/join`)
    const requestId = join.data.data.join_request_id
    await owner.client.post(`/api/join-requests/${requestId}/respond`, { action: 'decline' })
    expect((await owner.client.delete(`/api/group/${group.id}`)).status).toBe(200)

    await eventually(() => events.length === 3 && answers.length === 1)
    expect(events).toEqual([
      ['MessageDeleted', { message_id: message.id, group_id: group.id, deleted_by: member.user.id }],
      ['UserLeftGroup', { group_id: group.id, user_id: member.user.id, member_count: 1 }],
      ['GroupDeleted', { group_id: group.id, deleted_by: owner.user.id }],
    ])
    expect(answers).toEqual([
      { join_request_id: requestId, group_id: group.id, user_id: requester.user.id, status: 'declined' },
    ])
  })

  it('refuses the group channel to a non-member (403 from the auth route)', async () => {
    const owner = await tab()
    const outsider = await tab()
    const group = await createGroup(owner.client)
    const errors: unknown[] = []
    outsider.echo.private(`chat.group.${group.id}`).error((error: unknown) => errors.push(error))
    const failure = await eventually(() => errors[0])
    expect(failure).toMatchObject({ type: 'AuthError' })
    const auth = await outsider.client.post('/api/broadcasting/auth', {
      socket_id: outsider.socketId,
      channel_name: `private-chat.group.${group.id}`,
    })
    expect(auth.status).toBe(403)
  })

  it('delivers a hold capture to .notification() on the user channel', async () => {
    const trader = await tab()
    await grantCredits(t.database.db, trader.user.id, 10)
    const notifications: { type: string; status: string; broker_parent_order_id: string }[] = []
    trader.echo
      .private(`App.Models.User.${trader.user.id}`)
      .notification((n: { type: string; status: string; broker_parent_order_id: string }) =>
        notifications.push(n),
      )
    await settle()
    expect((await trader.client.post('/api/credit-holds', { broker_parent_order_id: 'ord-1' })).status).toBe(
      201,
    )
    expect(
      (await trader.client.post('/api/credit-holds/capture', { broker_parent_order_id: 'ord-1' })).status,
    ).toBe(200)
    const captured = await eventually(() => notifications.find((n) => n.status === 'captured'))
    expect(captured).toMatchObject({ type: 'order-status-updated', broker_parent_order_id: 'ord-1' })
  })

  it('lists presence members once per user however many tabs, and says when they come and go', async () => {
    const ada = await tab()
    const bobFirst = await tab()
    const group = await createGroup(ada.client)
    await joinGroup(bobFirst.client, group.id)
    const channel = `chat.group.${group.id}`
    let here: { id: number; name: string }[] = []
    const joining: number[] = []
    const leaving: number[] = []
    ada.echo
      .join(channel)
      .here((users: { id: number; name: string }[]) => {
        here = users
      })
      .joining((user: { id: number }) => joining.push(user.id))
      .leaving((user: { id: number }) => leaving.push(user.id))
    await eventually(() => here.length === 1)
    expect(here[0]).toEqual({ id: ada.user.id, name: ada.user.name, profile_photo_url: null })

    bobFirst.echo.join(channel)
    await eventually(() => joining.length === 1)
    const bobSecond = await tab(bobFirst)
    bobSecond.echo.join(channel)
    await settle()
    expect(joining).toEqual([bobFirst.user.id])

    bobFirst.echo.disconnect()
    await settle()
    expect(leaving).toEqual([])
    bobSecond.echo.disconnect()
    await eventually(() => leaving.length === 1)
    expect(leaving).toEqual([bobFirst.user.id])
  })

  it('passes a whisper to the user’s other tab, never back to the sender', async () => {
    const first = await tab()
    const second = await tab(first)
    const channel = `App.Models.User.${first.user.id}`
    const atFirst: unknown[] = []
    const atSecond: unknown[] = []
    first.echo.private(channel).listenForWhisper('token-updated', (e: unknown) => atFirst.push(e))
    second.echo.private(channel).listenForWhisper('token-updated', (e: unknown) => atSecond.push(e))
    await settle()
    first.echo.private(channel).whisper('token-updated', { broker_account_hash: 'abc' })
    await eventually(() => atSecond.length === 1)
    await settle()
    expect(atSecond).toEqual([{ broker_account_hash: 'abc' }])
    expect(atFirst).toEqual([])
  })

  it('leaves out the socket named by X-Socket-Id (toOthers)', async () => {
    const ada = await tab()
    const bob = await tab()
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const atAda: string[] = []
    const atBob: string[] = []
    ada.echo.private(`chat.group.${group.id}`).listen('SocketMessage', (e: { message: { body: string } }) => {
      atAda.push(e.message.body)
    })
    bob.echo.private(`chat.group.${group.id}`).listen('SocketMessage', (e: { message: { body: string } }) => {
      atBob.push(e.message.body)
    })
    await settle()
    const res = await ada.client.post(
      '/api/message',
      { group_id: group.id, body: 'only for others' },
      { headers: { 'x-socket-id': ada.socketId } },
    )
    expect(res.status).toBe(201)
    await eventually(() => atBob.includes('only for others'))
    await settle()
    expect(atAda).not.toContain('only for others')
  })

  it('ignores an X-Socket-Id naming another user’s socket: that socket still gets the broadcast', async () => {
    const ada = await tab()
    const bob = await tab()
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const atAda: string[] = []
    let subscribed = false
    ada.echo
      .private(`chat.group.${group.id}`)
      .subscribed(() => {
        subscribed = true
      })
      .listen('SocketMessage', (e: { message: { body: string } }) => atAda.push(e.message.body))
    await eventually(() => subscribed)
    const res = await bob.client.post(
      '/api/message',
      { group_id: group.id, body: 'Bob names Ada’s socket' },
      { headers: { 'x-socket-id': ada.socketId } },
    )
    expect(res.status).toBe(201)
    await eventually(() => atAda.includes('Bob names Ada’s socket'))
  })

  it('refuses (403) to sign a channel for a socket that is another user’s', async () => {
    const ada = await signedInClient(t)
    const bob = await signedInClient(t)
    const socket = await PusherSocket.open(t.baseUrl, t.config.realtime.key)
    sockets.push(socket)
    const auth = (client: TestClient, userId: number) =>
      client.post('/api/broadcasting/auth', {
        socket_id: socket.socketId,
        channel_name: `private-App.Models.User.${userId}`,
      })
    const adas = await auth(ada.client, ada.user.id)
    expect(adas.status).toBe(200)
    await socket.subscribe(`private-App.Models.User.${ada.user.id}`, adas.data.auth)

    const bobs = await auth(bob.client, bob.user.id)
    expect(bobs.status).toBe(403)
    expect(bobs.data).toEqual({ message: 'This action is unauthorized.' })
    // Ada's own channel is still signed for her socket.
    expect((await auth(ada.client, ada.user.id)).status).toBe(200)
  })

  it('says a user is online while a tab has their channel open, and when it was last seen', async () => {
    const ada = await signedInClient(t, { name: 'Ada Online' })
    const bob = await signedInClient(t)
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const status = async () => (await bob.client.get(`/api/user/${ada.user.id}/status`)).data.data
    expect(await status()).toMatchObject({ online: false, last_seen_at: null })
    const adaTab = await tab(ada)
    adaTab.echo.private(`App.Models.User.${ada.user.id}`)
    await eventually(async () => (await status()).online)
    const online = await bob.client.get(`/api/group/${group.id}/status`)
    expect(online.data.data.online_count).toBe(1)
    adaTab.echo.disconnect()
    const after = await eventually(async () => {
      const now = await status()
      return !now.online && now
    })
    expect(after).toEqual({ id: ada.user.id, online: false, last_seen_at: expect.stringMatching(/Z$/) })
    expect((await bob.client.get(`/api/group/${group.id}/status`)).data.data.online_count).toBe(0)
  })

  it('gives members a group’s online count and a requester (declined or pending) none', async () => {
    const ada = await tab()
    const declined = await signedInClient(t)
    const pending = await signedInClient(t)
    const group = await createGroup(ada.client, { is_private: true })
    ada.echo.private(`App.Models.User.${ada.user.id}`)
    const statusOf = async (client: typeof ada.client) =>
      (await client.get(`/api/group/${group.id}/status`)).data.data
    await eventually(async () => (await statusOf(ada.client)).online_count === 1)

    const asked = await declined.client.post(`/api/group/${group.id}/join`)
    const answer = await ada.client.post(`/api/join-requests/${asked.data.data.join_request_id}/respond`, {
      action: 'decline',
    })
    expect(answer.status).toBe(200)
    expect((await pending.client.post(`/api/group/${group.id}/join`)).status).toBe(200)
    expect(await statusOf(declined.client)).toMatchObject({
      is_member: false,
      join_request: { status: 'declined' },
      online_count: null,
    })
    expect(await statusOf(pending.client)).toMatchObject({
      join_request: { status: 'pending' },
      online_count: null,
    })
    expect(await statusOf(ada.client)).toMatchObject({ is_member: true, online_count: 1 })
  })
})

describe('the trigger API, through the official pusher server SDK', () => {
  const sdk = (secret = t.config.realtime.secret) =>
    new PusherServer({
      appId: t.config.realtime.appId,
      key: t.config.realtime.key,
      secret,
      host: '127.0.0.1',
      port: new URL(t.baseUrl).port,
      useTLS: false,
    })

  it('publishes an event the app’s Echo receives, and tells which channels are occupied', async () => {
    const trader = await tab()
    const channel = `App.Models.User.${trader.user.id}`
    const received: unknown[] = []
    trader.echo.private(channel).listen('.order.filled', (e: unknown) => received.push(e))
    await settle()
    const res = await sdk().trigger(`private-${channel}`, 'order.filled', {
      order: { id: 7, status: 'filled' },
    })
    expect(res.status).toBe(200)
    await eventually(() => received.length === 1)
    expect(received).toEqual([{ order: { id: 7, status: 'filled' } }])

    const one = await sdk().get({
      path: `/channels/private-${channel}`,
      params: { info: 'subscription_count' },
    })
    expect(await one.json()).toEqual({ occupied: true, subscription_count: 1 })
    const list = await sdk().get({
      path: '/channels',
      params: { filter_by_prefix: 'private-App.Models.User.' },
    })
    expect(Object.keys((await list.json()).channels)).toContain(`private-${channel}`)
  })

  it('refuses a request signed with another secret (401) and delivers nothing', async () => {
    const trader = await tab()
    const channel = `App.Models.User.${trader.user.id}`
    const received: unknown[] = []
    trader.echo.private(channel).listen('.order.filled', (e: unknown) => received.push(e))
    await settle()
    await expect(
      sdk('not-the-secret-at-all').trigger(`private-${channel}`, 'order.filled', {}),
    ).rejects.toMatchObject({
      status: 401,
    })
    await settle()
    expect(received).toEqual([])
  })
})
