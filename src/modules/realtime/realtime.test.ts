import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import { createGroup, joinGroup, postMessage } from '../../../test/helpers/chat.ts'
import { connected, echoFor, eventually, settle } from '../../../test/helpers/echo.ts'
import { grantCredits, signedInClient } from '../../../test/helpers/factories.ts'

let t: TestApp
const echoes: { disconnect(): void }[] = []
beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(async () => {
  for (const echo of echoes) echo.disconnect()
  await t?.close()
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
})
