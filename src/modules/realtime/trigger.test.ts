import { createHash, createHmac } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { connected, echoFor, eventually, settle } from '../../../test/helpers/echo.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'

/** Pusher's HTTP API, signed by hand, for what a server SDK would not send (limits, stale or bad signatures). */
const t = appUnderTest()
const echoes: { disconnect(): void }[] = []
afterAll(() => {
  for (const echo of echoes) echo.disconnect()
})

interface Signed {
  secret?: string
  timestamp?: number
  md5Of?: string
}

/** A request signed as pusher-http-node signs it (sorted `key=value` query, body_md5 for a body). */
async function signedRequest(method: 'GET' | 'POST', subPath: string, body?: unknown, options: Signed = {}) {
  const { appId, key, secret } = t.config.realtime
  const path = `/apps/${appId}${subPath}`
  const raw = body === undefined ? undefined : JSON.stringify(body)
  const params: Record<string, string> = {
    auth_key: key,
    auth_timestamp: String(options.timestamp ?? Math.floor(t.clock.nowMs() / 1000)),
    auth_version: '1.0',
  }
  if (raw !== undefined)
    params.body_md5 = createHash('md5')
      .update(options.md5Of ?? raw)
      .digest('hex')
  const query = Object.keys(params)
    .sort()
    .map((name) => `${name}=${params[name]}`)
    .join('&')
  const signature = createHmac('sha256', options.secret ?? secret)
    .update(`${method}\n${path}\n${query}`)
    .digest('hex')
  const res = await fetch(`${t.baseUrl}${path}?${query}&auth_signature=${signature}`, {
    method,
    body: raw,
    headers: raw === undefined ? {} : { 'content-type': 'application/json' },
  })
  return { status: res.status, data: (await res.json()) as Record<string, unknown> }
}

async function listener() {
  const person = await signedInClient(t)
  const echo = echoFor(t, person.client)
  echoes.push(echo)
  await connected(echo)
  const channel = `App.Models.User.${person.user.id}`
  const received: unknown[] = []
  echo.private(channel).listen('.order.filled', (e: unknown) => received.push(e))
  await settle()
  return { channel: `private-${channel}`, received }
}

describe('POST /apps/{app_id}/events and /batch_events', () => {
  it('delivers a signed event, and a batch', async () => {
    const { channel, received } = await listener()
    const one = await signedRequest('POST', '/events', {
      name: 'order.filled',
      data: '{"n":1}',
      channels: [channel],
    })
    expect(one).toEqual({ status: 200, data: {} })
    const batch = await signedRequest('POST', '/batch_events', {
      batch: [
        { name: 'order.filled', data: '{"n":2}', channel },
        { name: 'order.filled', data: '{"n":3}', channel },
      ],
    })
    expect(batch.status).toBe(200)
    await eventually(() => received.length === 3)
    expect(received).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }])
  })

  it('refuses a wrong secret, a stale timestamp and a body that is not the one signed (401), delivering nothing', async () => {
    const { channel, received } = await listener()
    const event = { name: 'order.filled', data: '{}', channels: [channel] }
    const now = Math.floor(t.clock.nowMs() / 1000)
    for (const options of [{ secret: 'wrong-secret' }, { timestamp: now - 601 }, { md5Of: 'another body' }]) {
      const res = await signedRequest('POST', '/events', event, options)
      expect(res).toEqual({ status: 401, data: { message: 'Authentication signature invalid.' } })
    }
    expect((await signedRequest('POST', '/events', event, { timestamp: now - 590 })).status).toBe(200)
    await eventually(() => received.length === 1)
  })

  it('refuses more than 100 channels, more than 10 KB of data or 10 events in a batch (413), and a bad body (422)', async () => {
    const { channel, received } = await listener()
    const many = Array.from({ length: 101 }, (_, i) => `channel-${i}`)
    expect((await signedRequest('POST', '/events', { name: 'x', data: '{}', channels: many })).status).toBe(
      413,
    )
    const big = JSON.stringify({ text: 'x'.repeat(10 * 1024) })
    expect(
      (await signedRequest('POST', '/events', { name: 'x', data: big, channels: [channel] })).status,
    ).toBe(413)
    const eleven = Array.from({ length: 11 }, () => ({ name: 'order.filled', data: '{}', channel }))
    expect((await signedRequest('POST', '/batch_events', { batch: eleven })).status).toBe(413)
    const noChannel = await signedRequest('POST', '/events', { name: 'x', data: '{}' })
    expect(noChannel.status).toBe(422)
    expect(noChannel.data.errors).toEqual({
      channels: ['The channels field is required when channel is not present.'],
    })
    const objectData = await signedRequest('POST', '/events', {
      name: 'x',
      data: { a: 1 },
      channels: [channel],
    })
    expect(objectData.status).toBe(422)
    expect(Object.keys(objectData.data.errors as object)).toEqual(['data'])
    await settle()
    expect(received).toEqual([])
  })
})

describe('GET /apps/{app_id}/channels...', () => {
  it('lists occupied channels and a presence channel’s users', async () => {
    const { channel } = await listener()
    const list = await signedRequest('GET', '/channels')
    expect(list.status).toBe(200)
    expect(Object.keys(list.data.channels as object)).toContain(channel)
    const one = await signedRequest('GET', `/channels/${channel}`)
    expect(one.data).toEqual({ occupied: true })
    expect((await signedRequest('GET', '/channels/presence-nobody.here/users')).data).toEqual({ users: [] })
    expect((await signedRequest('GET', `/channels/${channel}/users`)).status).toBe(400)
    expect((await signedRequest('GET', '/channels', undefined, { secret: 'wrong-secret' })).status).toBe(401)
  })
})
