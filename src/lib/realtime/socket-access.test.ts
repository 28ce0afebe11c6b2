import { describe, expect, it } from 'vitest'
import { endAccessOn, SocketAccess } from './socket-access.ts'

const ownerOf = (channel: string) => /^private-App\.Models\.User\.(\d+)$/.exec(channel)?.[1] ?? null
const LIMIT = 10
const mine = { userId: '7', sessionId: 'session-a' }
const other = { userId: '7', sessionId: 'session-b' }

/** A socket as the hub keeps it: its subscriptions (presence ones naming their member) and grants. */
function socket(
  subscriptions: Record<string, { userId?: string }>,
  grants: Record<string, typeof mine> = {},
) {
  const access = new SocketAccess()
  for (const [channel, by] of Object.entries(grants)) access.grant(channel, by, LIMIT)
  return { access, channels: new Map(Object.entries(subscriptions)) }
}

describe('endAccessOn', () => {
  it('drops the subscriptions of the session that ended and leaves public channels alone', () => {
    const s = socket(
      { 'private-App.Models.User.7': {}, 'private-chat.group.3': {}, 'market-news': {} },
      { 'private-App.Models.User.7': mine, 'private-chat.group.3': other },
    )
    expect(endAccessOn(s, { userId: '7', exceptSessionId: 'session-b' }, ownerOf)).toEqual({
      close: false,
      drop: ['private-App.Models.User.7'],
      released: false,
    })
    expect(endAccessOn(s, { userId: '7', sessionId: 'session-b' }, ownerOf).drop).toEqual([
      'private-chat.group.3',
    ])
  })

  it('ends a grant not yet used, so its signature cannot subscribe later; a new grant can', () => {
    const s = socket({}, { 'private-chat.group.3': mine })
    expect(endAccessOn(s, { channels: ['private-chat.group.3'], userId: '7' }, ownerOf).drop).toEqual([])
    expect(s.access.mayJoin('private-chat.group.3')).toBe(false)
    expect(s.access.mayJoin('private-chat.group.4')).toBe(true)
    s.access.grant('private-chat.group.3', mine, LIMIT)
    expect(s.access.mayJoin('private-chat.group.3')).toBe(true)
  })

  it('knows a subscription whose grant has not arrived by its presence member or channel owner', () => {
    const s = {
      channels: new Map([
        ['presence-chat.group.3', { userId: '7' }],
        ['private-App.Models.User.8', {}],
      ]),
    }
    expect(endAccessOn(s, { userId: '7' }, ownerOf).drop).toEqual(['presence-chat.group.3'])
    expect(endAccessOn(s, { userId: '8', closeSockets: true }, ownerOf)).toEqual({
      close: true,
      drop: ['private-App.Models.User.8'],
      released: false,
    })
  })

  it('closes a locked-out user’s socket even when it holds none of their channels now', () => {
    // Granted its user channel, which it left (or never joined).
    const s = socket({ 'market-news': {} }, { 'private-App.Models.User.7': mine })
    expect(endAccessOn(s, { userId: '7', closeSockets: true }, ownerOf).close).toBe(true)
    expect(endAccessOn(s, { userId: '9', closeSockets: true }, ownerOf).close).toBe(false)
  })
})

describe('SocketAccess', () => {
  const bob = { userId: '8', sessionId: 'session-c' }

  it('belongs to the first user granted a channel, refuses anyone else’s grant, and is nobody’s once none of theirs is left', () => {
    const access = new SocketAccess()
    expect(access.grant('private-App.Models.User.7', mine, LIMIT)).toBe('recorded')
    expect(access.grant('private-App.Models.User.8', bob, LIMIT)).toBe('another-users')
    expect(access.owner).toBe('7')
    expect(access.end(['private-App.Models.User.7'])).toBe(true)
    expect(access.owner).toBeUndefined()
    expect(access.grant('private-App.Models.User.8', bob, LIMIT)).toBe('recorded')
    expect(access.owner).toBe('8')
    // The former owner's ended channel stays ended.
    expect(access.mayJoin('private-App.Models.User.7')).toBe(false)
  })

  it('remembers at most `limit` channels, granted or ended; a channel granted again takes no more room', () => {
    const access = new SocketAccess()
    expect(access.grant('private-chat.group.1', mine, 2)).toBe('recorded')
    expect(access.grant('private-chat.group.2', mine, 2)).toBe('recorded')
    expect(access.grant('private-chat.group.2', other, 2)).toBe('recorded')
    access.end(['private-chat.group.1'])
    expect(access.grant('private-chat.group.3', mine, 2)).toBe('full')
    expect(access.grant('private-chat.group.1', mine, 2)).toBe('recorded')
  })
})
