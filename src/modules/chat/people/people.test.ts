import { describe, expect, it } from 'vitest'
import { createGroup, joinGroup } from '../../../../test/helpers/chat.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'

const t = appUnderTest()

describe('GET /api/user/{user} and /api/user/{user}/status', () => {
  it('shows fellow members (never an email) and hides everyone else behind a 404', async () => {
    const ada = await signedInClient(t, { name: 'Ada' })
    const bob = await signedInClient(t, { name: 'Bob' })
    const stranger = await signedInClient(t, { name: 'Stranger' })
    const group = await createGroup(ada.client, { is_private: true })
    const res = await bob.client.get(`/api/user/${ada.user.id}`)
    expect(res.status).toBe(404)
    expect(res.text).not.toContain('Ada')

    // Bob joins through the group's owner approving his request.
    const join = await bob.client.post(`/api/group/${group.id}/join`)
    await ada.client.post(`/api/join-requests/${join.data.data.join_request_id}/respond`, {
      action: 'approve',
    })

    const seen = await bob.client.get(`/api/user/${ada.user.id}`)
    expect(seen.status).toBe(200)
    expect(seen.data).toEqual({
      data: {
        id: ada.user.id,
        name: 'Ada',
        profile_photo_url: null,
        created_at: expect.stringMatching(/Z$/),
      },
    })
    expect(seen.text).not.toContain(ada.user.email)
    expect((await stranger.client.get(`/api/user/${ada.user.id}`)).status).toBe(404)
    expect((await stranger.client.get(`/api/user/${ada.user.id}/status`)).status).toBe(404)
    expect((await stranger.client.get(`/api/user/${stranger.user.id}`)).status).toBe(200)
    expect((await stranger.client.get('/api/user/999999999')).status).toBe(404)
    expect((await stranger.client.get('/api/user/abc')).status).toBe(404)
  })

  it('is offline, never seen, without a socket (src/modules/realtime tests the online side)', async () => {
    const ada = await signedInClient(t)
    const bob = await signedInClient(t)
    const group = await createGroup(ada.client)
    await joinGroup(bob.client, group.id)
    const res = await bob.client.get(`/api/user/${ada.user.id}/status`)
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ data: { id: ada.user.id, online: false, last_seen_at: null } })
  })
})
