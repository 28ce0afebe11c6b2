import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createGroup, joinGroup, postMessage, recordEvents } from '../../../test/helpers/chat.ts'
import { signedInAdmin, signedInClient } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'

/**
 * Deleting an account (by its owner or by an admin) keeps the conversations readable: the person
 * leaves every group, their messages stay with no author, a group they owned passes to its
 * longest-standing member, and one nobody else was in is deleted with its files.
 */
const t = appUnderTest()

const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(32, 1)])
const attachmentFiles = () => {
  const folder = join(t.config.dataDir, 'chat-attachments')
  return existsSync(folder) ? readdirSync(folder) : []
}

describe('deleting an account', () => {
  it('hands an owned group to the longest-standing member and keeps the messages without an author', async () => {
    const owner = await signedInClient(t, { name: 'Leaving Owner' })
    const first = await signedInClient(t, { name: 'First' })
    const second = await signedInClient(t, { name: 'Second' })
    const group = await createGroup(owner.client)
    await joinGroup(first.client, group.id)
    await joinGroup(second.client, group.id)
    const written = await postMessage(owner.client, group.id, 'my last word')
    const recorder = recordEvents(t.app, ['UserLeftGroup', 'GroupDeleted', 'SocketMessage'])

    const res = await owner.client.delete('/api/user-profile', { password: owner.password })
    expect(res.status).toBe(200)

    const view = await first.client.get(`/api/group/${group.id}`)
    expect(view.status).toBe(200)
    expect(view.data.data).toMatchObject({ owner_id: first.user.id, member_count: 2 })
    expect(view.data.data.members.map((m: { id: number; role: string }) => [m.id, m.role])).toEqual([
      [first.user.id, 'owner'],
      [second.user.id, 'member'],
    ])
    const kept = view.data.data.messages.find((m: { id: number }) => m.id === written.id)
    expect(kept).toMatchObject({ body: 'my last word', user: null, kind: 'user' })
    expect(view.data.data.messages.at(-1)).toMatchObject({
      kind: 'system',
      body: 'Leaving Owner left the group.',
    })
    expect(recorder.of('UserLeftGroup')).toEqual([
      { groupId: group.id, userId: owner.user.id, memberCount: 2 },
    ])
    expect(recorder.of('GroupDeleted')).toEqual([])
    // The new owner can act as one.
    expect((await first.client.put(`/api/group/${group.id}`, { name: 'Renamed' })).status).toBe(200)
    recorder.stop()
  })

  it('deletes a group its owner was alone in, with its files, when an admin deletes the account', async () => {
    const admin = await signedInAdmin(t)
    const loner = await signedInClient(t)
    const kept = await createGroup(loner.client, { name: 'Shared' })
    const other = await signedInClient(t)
    await joinGroup(other.client, kept.id)
    const alone = await createGroup(loner.client, { name: 'Alone', is_private: true })
    const before = attachmentFiles().length
    const form = new FormData()
    form.append('group_id', String(alone.id))
    form.append('attachments[]', new Blob([PNG], { type: 'image/png' }), 'a.png')
    const upload = await fetch(`${t.baseUrl}/api/message`, {
      method: 'POST',
      body: form,
      headers: {
        cookie: loner.client.cookieHeader,
        'x-xsrf-token': decodeURIComponent(loner.client.cookies.get('XSRF-TOKEN') ?? ''),
      },
    })
    expect(upload.status).toBe(201)
    expect(attachmentFiles()).toHaveLength(before + 1)
    const recorder = recordEvents(t.app, ['GroupDeleted', 'UserLeftGroup'])

    const res = await admin.client.delete(`/api/users/${loner.user.id}`)
    expect(res.status).toBe(200)

    expect(recorder.of('GroupDeleted')).toEqual([
      { groupId: alone.id, deletedBy: loner.user.id, memberIds: [loner.user.id] },
    ])
    expect(recorder.of('UserLeftGroup')).toEqual([
      { groupId: kept.id, userId: loner.user.id, memberCount: 1 },
    ])
    expect(attachmentFiles()).toHaveLength(before)
    expect((await admin.client.get(`/api/group/${alone.id}`)).status).toBe(404)
    const shared = await other.client.get(`/api/group/${kept.id}`)
    expect(shared.data.data).toMatchObject({ owner_id: other.user.id, member_count: 1 })
    recorder.stop()
  })
})
