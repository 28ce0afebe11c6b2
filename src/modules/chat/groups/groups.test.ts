import { and, eq, gt } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { createGroup, joinGroup, postMessage, recordEvents } from '../../../../test/helpers/chat.ts'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import { chatGroupMembers, chatGroups, chatMessages } from '../../../db/schema/index.ts'

const t = appUnderTest()

const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

describe('POST /api/group', () => {
  it('creates a group the caller owns and belongs to', async () => {
    const { client, user } = await signedInClient(t, { name: 'Ada' })
    const res = await client.post('/api/group', {
      name: '  Options desk  ',
      description: 'Spreads and hedges',
    })
    expect(res.status).toBe(201)
    expect(res.data).toEqual({
      data: {
        id: expect.any(Number),
        name: 'Options desk',
        description: 'Spreads and hedges',
        is_private: false,
        owner_id: user.id,
        member_count: 1,
        created_at: expect.stringMatching(DATE),
        updated_at: expect.stringMatching(DATE),
      },
    })
    const view = await client.get(`/api/group/${res.data.data.id}`)
    expect(view.status).toBe(200)
    expect(view.data.data.membership).toEqual({ role: 'owner', joined_at: expect.stringMatching(DATE) })
    expect(view.data.data.members).toEqual([
      {
        id: user.id,
        name: 'Ada',
        profile_photo_url: null,
        role: 'owner',
        joined_at: expect.stringMatching(DATE),
      },
    ])
    expect(view.data.data.messages).toEqual([])
    expect(view.data.data.has_more_messages).toBe(false)
    expect(view.data.data.join_requests).toEqual([])
  })

  it.each([
    [{}, { name: ['The name field is required.'] }],
    [{ name: '   ' }, { name: ['The name field is required.'] }],
    [{ name: 'x'.repeat(101) }, { name: ['The name field must not be greater than 100 characters.'] }],
    [
      { name: 'ok', description: 'd'.repeat(1001) },
      { description: ['The description field must not be greater than 1000 characters.'] },
    ],
    [{ name: 'ok', is_private: 'maybe' }, { is_private: ['The is private field must be true or false.'] }],
  ])('refuses %j with 422 and creates nothing', async (body, errors) => {
    const { client } = await signedInClient(t)
    const res = await client.post('/api/group', body)
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual(errors)
    const sidebar = await client.get('/api/sidebar-conversations')
    expect(sidebar.data.data).toEqual([])
  })

  it('lets a user create 10 groups an hour; the 11th is 429 with Retry-After, and creates nothing', async () => {
    const { client } = await signedInClient(t)
    for (let i = 0; i < 10; i++) await createGroup(client, { name: `Desk ${i}` })
    const refused = await client.post('/api/group', { name: 'One too many' })
    expect(refused.status).toBe(429)
    expect(refused.data).toEqual({ message: 'Too Many Attempts.' })
    const retryAfter = Number(refused.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(3600)
    expect(refused.headers.get('x-ratelimit-limit')).toBe('10')
    expect((await client.get('/api/sidebar-conversations')).data.data).toHaveLength(10)

    // Someone else's allowance is their own; an hour later this user creates again.
    await createGroup((await signedInClient(t)).client)
    t.clock.advance(61 * 60_000)
    await createGroup(client, { name: 'Next hour' })
  })
})

describe('joining, leaving and the events they emit', () => {
  it('joins a public group at once, with a system message announced as SocketMessage', async () => {
    const { client: owner } = await signedInClient(t)
    const { client: bob, user: bobUser } = await signedInClient(t, { name: 'Bob' })
    const group = await createGroup(owner)
    const recorder = recordEvents(t.app, ['SocketMessage', 'UserLeftGroup'])
    const joined = await bob.post(`/api/group/${group.id}/join`)
    expect(joined.status).toBe(200)
    expect(joined.data).toEqual({ data: { status: 'member' } })
    const again = await bob.post(`/api/group/${group.id}/join`)
    expect(again.data).toEqual({ data: { status: 'member' } })
    const [notice] = recorder.of('SocketMessage')
    expect(recorder.of('SocketMessage')).toHaveLength(1)
    expect(notice).toMatchObject({ groupId: group.id, senderId: null })
    expect(notice?.message).toMatchObject({ kind: 'system', user: null, body: 'Bob joined the group.' })

    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data.member_count).toBe(2)
    expect(view.data.data.members.map((m: { id: number }) => m.id)).toContain(bobUser.id)

    recorder.clear()
    const left = await bob.delete(`/api/group/${group.id}/leave`)
    expect(left.status).toBe(200)
    expect(recorder.of('UserLeftGroup')).toEqual([{ groupId: group.id, userId: bobUser.id, memberCount: 1 }])
    expect(recorder.of('SocketMessage')[0]?.message).toMatchObject({ body: 'Bob left the group.' })
    const notMember = await bob.delete(`/api/group/${group.id}/leave`)
    expect(notMember.status).toBe(404)
    recorder.stop()
  })

  it('keeps the owner in while others remain, and deletes the group when the owner leaves alone', async () => {
    const { client: owner } = await signedInClient(t)
    const { client: bob } = await signedInClient(t)
    const group = await createGroup(owner)
    await joinGroup(bob, group.id)
    const refused = await owner.delete(`/api/group/${group.id}/leave`)
    expect(refused.status).toBe(422)
    expect(Object.keys(refused.data.errors)).toEqual(['group'])
    await bob.delete(`/api/group/${group.id}/leave`)
    const recorder = recordEvents(t.app, ['GroupDeleted'])
    const alone = await owner.delete(`/api/group/${group.id}/leave`)
    expect(alone.status).toBe(200)
    expect(recorder.events).toHaveLength(1)
    expect((await owner.get(`/api/group/${group.id}`)).status).toBe(404)
    recorder.stop()
  })

  it('posts, counts unread messages by others, and clears them when the group is viewed', async () => {
    const { client: owner } = await signedInClient(t)
    const { client: bob } = await signedInClient(t)
    const group = await createGroup(owner)
    await joinGroup(bob, group.id)
    await postMessage(owner, group.id, 'Long AAPL')
    await postMessage(owner, group.id, 'Stop at 180')
    await postMessage(bob, group.id, 'Thanks')
    const status = await bob.get(`/api/group/${group.id}/status`)
    expect(status.data.data).toEqual({
      is_member: true,
      role: 'member',
      join_request: null,
      unread_count: 2,
      online_count: 0,
    })
    const sidebar = await bob.get('/api/sidebar-conversations')
    expect(sidebar.data.data).toEqual([
      {
        group: { id: group.id, name: group.name, is_private: false, member_count: 2 },
        last_message: expect.objectContaining({ body: 'Thanks', kind: 'user' }),
        unread_count: 2,
        last_activity_at: expect.stringMatching(DATE),
      },
    ])
    await bob.get(`/api/group/${group.id}`)
    expect((await bob.get(`/api/group/${group.id}/status`)).data.data.unread_count).toBe(0)
    expect((await owner.get(`/api/group/${group.id}/status`)).data.data.unread_count).toBe(1)
  })
})

describe('PUT /api/group/{group}', () => {
  it('lets the owner rename, describe, close the group and hand it to a member', async () => {
    const { client: owner, user: ownerUser } = await signedInClient(t)
    const { client: bob, user: bobUser } = await signedInClient(t)
    const group = await createGroup(owner)
    await joinGroup(bob, group.id)
    const res = await owner.put(`/api/group/${group.id}`, {
      name: 'Renamed',
      description: 'Now private',
      is_private: true,
      owner_id: bobUser.id,
    })
    expect(res.status).toBe(200)
    expect(res.data.data).toMatchObject({
      id: group.id,
      name: 'Renamed',
      description: 'Now private',
      is_private: true,
      owner_id: bobUser.id,
      member_count: 2,
    })
    const view = await bob.get(`/api/group/${group.id}`)
    expect(view.data.data.members.map((m: { id: number; role: string }) => [m.id, m.role])).toEqual([
      [bobUser.id, 'owner'],
      [ownerUser.id, 'member'],
    ])
    // The former owner is a plain member now.
    expect((await owner.put(`/api/group/${group.id}`, { name: 'Mine again' })).status).toBe(403)
    // A field left out keeps its value; an empty description clears it.
    const partial = await bob.put(`/api/group/${group.id}`, { description: '' })
    expect(partial.data.data).toMatchObject({ name: 'Renamed', description: null, is_private: true })
  })

  it('refuses a new owner who is not a member, and bad fields, with 422 and no change', async () => {
    const { client: owner } = await signedInClient(t)
    const { user: stranger } = await signedInClient(t)
    const group = await createGroup(owner, { name: 'Stays' })
    const notMember = await owner.put(`/api/group/${group.id}`, { owner_id: stranger.id, name: 'Changed' })
    expect(notMember.status).toBe(422)
    expect(notMember.data.errors).toEqual({ owner_id: ['The new owner must be a member of the group.'] })
    const tooLong = await owner.put(`/api/group/${group.id}`, { name: 'n'.repeat(101) })
    expect(tooLong.status).toBe(422)
    expect(Object.keys(tooLong.data.errors)).toEqual(['name'])
    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data).toMatchObject({ name: 'Stays', owner_id: group.owner_id })
  })
})

describe('DELETE /api/group/{group}', () => {
  it('deletes the group with its messages and emits GroupDeleted once with who belonged', async () => {
    const { client: owner, user: ownerUser } = await signedInClient(t)
    const { client: bob, user: bobUser } = await signedInClient(t)
    const group = await createGroup(owner)
    await joinGroup(bob, group.id)
    const message = await postMessage(bob, group.id, 'soon gone')
    const recorder = recordEvents(t.app, ['GroupDeleted'])
    const res = await owner.delete(`/api/group/${group.id}`)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ message: 'The group has been deleted.' })
    expect(recorder.of('GroupDeleted')).toHaveLength(1)
    const [event] = recorder.of('GroupDeleted')
    expect(event?.groupId).toBe(group.id)
    expect(event?.deletedBy).toBe(ownerUser.id)
    expect([...(event?.memberIds ?? [])].sort()).toEqual([ownerUser.id, bobUser.id].sort())
    expect((await bob.get(`/api/message/older/${message.id}`)).status).toBe(404)
    expect((await bob.get('/api/sidebar-conversations')).data.data).toEqual([])
    expect((await owner.delete(`/api/group/${group.id}`)).status).toBe(404)
    recorder.stop()
  })
})

describe('GET /api/sidebar-conversations', () => {
  it('lists only the caller’s groups, most recent activity first, each with its own unread count', async () => {
    const { client: ada } = await signedInClient(t)
    const { client: bob } = await signedInClient(t)
    const quiet = await createGroup(ada, { name: 'Quiet' })
    const busy = await createGroup(ada, { name: 'Busy' })
    const foreign = await createGroup(bob, { name: 'Not Ada’s' })
    await joinGroup(bob, quiet.id)
    await joinGroup(bob, busy.id)
    t.clock.advance(1000)
    await postMessage(bob, quiet.id, 'one')
    t.clock.advance(1000)
    await postMessage(bob, busy.id, 'two')
    await postMessage(bob, busy.id, 'three')
    t.clock.advance(1000)
    await postMessage(bob, foreign.id, 'elsewhere')
    const res = await ada.get('/api/sidebar-conversations')
    expect(res.status).toBe(200)
    expect(
      res.data.data.map(
        (c: { group: { name: string }; unread_count: number; last_message: { body: string } }) => [
          c.group.name,
          c.unread_count,
          c.last_message.body,
        ],
      ),
    ).toEqual([
      ['Busy', 2, 'three'],
      ['Quiet', 1, 'one'],
    ])
    t.clock.advance(1000)
    await postMessage(ada, quiet.id, 'Ada answers')
    const after = await ada.get('/api/sidebar-conversations')
    expect(after.data.data.map((c: { group: { name: string } }) => c.group.name)).toEqual(['Quiet', 'Busy'])
    // Her own message is not unread for her.
    expect(after.data.data[0].unread_count).toBe(1)
  })
})

describe('unread counts under concurrent posting and viewing', () => {
  it('always equal the messages by others after the read marker', async () => {
    const { client: bob, user: bobUser } = await signedInClient(t)
    const posters = await Promise.all([1, 2, 3, 4].map(() => signedInClient(t)))
    const group = await createGroup(posters[0]?.client as TestClient)
    await joinGroup(bob, group.id)
    for (const poster of posters.slice(1)) await joinGroup(poster.client, group.id)
    // Views land while posts are half-way through their counters.
    await Promise.all([
      ...posters.map(async ({ client }, p) => {
        for (let i = 0; i < 15; i++) await postMessage(client, group.id, `tick ${p}.${i}`)
      }),
      ...[1, 2].map(async () => {
        for (let i = 0; i < 30; i++) await bob.get(`/api/group/${group.id}`)
      }),
    ])
    const [member] = await t.database.db
      .select()
      .from(chatGroupMembers)
      .where(and(eq(chatGroupMembers.groupId, group.id), eq(chatGroupMembers.userId, bobUser.id)))
    const after = await t.database.db
      .select({ id: chatMessages.id })
      .from(chatMessages)
      .where(
        and(
          eq(chatMessages.groupId, group.id),
          eq(chatMessages.kind, 'user'),
          gt(chatMessages.id, member?.lastReadMessageId ?? 0),
        ),
      )
    const [stored] = await t.database.db.select().from(chatGroups).where(eq(chatGroups.id, group.id))
    // Stored as the group's conversation count less the member's read count.
    expect((stored?.conversationCount ?? 0) - (member?.readCount ?? 0)).toBe(after.length)
    expect((await bob.get(`/api/group/${group.id}/status`)).data.data.unread_count).toBe(after.length)
  })
})
