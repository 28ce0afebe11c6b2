import { describe, expect, it } from 'vitest'
import { createGroup, joinGroup, recordEvents } from '../../../../test/helpers/chat.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'

const t = appUnderTest()

const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const notFound = (id: number) => ({ message: `No query results for model [App\\Models\\JoinRequest] ${id}` })

/** An owner with a private group, and someone who asked to join it (a pending request). */
async function pendingRequest(requesterName = 'Rita Requester') {
  const { client: owner, user: ownerUser } = await signedInClient(t, { name: 'Olivia Owner' })
  const group = await createGroup(owner, { name: 'Insiders', is_private: true })
  const { client: requester, user: requesterUser } = await signedInClient(t, { name: requesterName })
  const res = await requester.post(`/api/group/${group.id}/join`)
  if (res.status !== 200 || res.data.data.status !== 'pending') {
    throw new Error(`join answered ${res.status} ${res.text}`)
  }
  return {
    owner,
    ownerUser,
    group,
    requester,
    requesterUser,
    requestId: res.data.data.join_request_id as number,
  }
}

const respond = (client: TestClient, id: number, action: unknown) =>
  client.post(`/api/join-requests/${id}/respond`, { action })

/** A second member of the owner's private group, let in through a join request. */
async function memberOf(owner: TestClient, groupId: number) {
  const { client } = await signedInClient(t)
  const joined = await client.post(`/api/group/${groupId}/join`)
  const approved = await respond(owner, joined.data.data.join_request_id, 'approve')
  if (approved.status !== 200) throw new Error(`approve answered ${approved.status} ${approved.text}`)
  return client
}

describe('asking to join a private group', () => {
  it('files one pending request, however often the requester asks', async () => {
    const { owner, group, requester, requesterUser, requestId } = await pendingRequest()
    expect(requestId).toEqual(expect.any(Number))
    const again = await requester.post(`/api/group/${group.id}/join`)
    expect(again.status).toBe(200)
    expect(again.data).toEqual({ data: { status: 'pending', join_request_id: requestId } })

    // Asking does not let the requester in.
    expect((await requester.get(`/api/group/${group.id}`)).status).toBe(404)

    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data.member_count).toBe(1)
    expect(view.data.data.join_requests).toEqual([
      {
        id: requestId,
        user: { id: requesterUser.id, name: 'Rita Requester', profile_photo_url: null },
        created_at: expect.stringMatching(DATE),
      },
    ])
  })

  it('shows the pending request in GET /api/group/{g}/status to a caller who can see the group', async () => {
    // A site admin sees every group, and joining a private one files a request like anyone else's.
    const { client: owner } = await signedInClient(t)
    const group = await createGroup(owner, { is_private: true })
    const { client: admin } = await signedInClient(t, { isAdmin: true })
    const joined = await admin.post(`/api/group/${group.id}/join`)
    expect(joined.data).toEqual({ data: { status: 'pending', join_request_id: expect.any(Number) } })
    const status = await admin.get(`/api/group/${group.id}/status`)
    expect(status.status).toBe(200)
    expect(status.data.data).toMatchObject({
      is_member: false,
      role: null,
      join_request: { id: joined.data.data.join_request_id, status: 'pending' },
    })
  })

  it('lets the requester follow the request on /status (and nothing else of the group) until approved', async () => {
    const { owner, group, requester, requestId } = await pendingRequest()
    const before = await requester.get(`/api/group/${group.id}/status`)
    expect(before.status).toBe(200)
    expect(before.data.data).toEqual({
      is_member: false,
      role: null,
      join_request: { id: requestId, status: 'pending' },
      unread_count: 0,
      online_count: null,
    })
    expect(before.text).not.toContain(group.name)
    // The group itself stays hidden from them.
    expect((await requester.get(`/api/group/${group.id}`)).status).toBe(404)
    expect((await respond(owner, requestId, 'approve')).status).toBe(200)
    const after = await requester.get(`/api/group/${group.id}/status`)
    expect(after.status).toBe(200)
    expect(after.data.data).toMatchObject({
      is_member: true,
      role: 'member',
      join_request: { id: requestId, status: 'approved' },
    })
  })
})

describe('POST /api/join-requests/{id}/respond', () => {
  it('approves: the requester becomes a member, a system message says so, one JoinRequestResponded', async () => {
    const { owner, ownerUser, group, requester, requesterUser, requestId } = await pendingRequest('Rita')
    const recorder = recordEvents(t.app, ['JoinRequestResponded', 'SocketMessage'])
    const res = await respond(owner, requestId, 'approve')
    expect(res.status).toBe(200)
    expect(res.data).toEqual({
      data: { id: requestId, group_id: group.id, user_id: requesterUser.id, status: 'approved' },
    })
    expect(recorder.of('JoinRequestResponded')).toEqual([
      {
        joinRequestId: requestId,
        groupId: group.id,
        userId: requesterUser.id,
        respondedBy: ownerUser.id,
        accepted: true,
        status: 'approved',
      },
    ])
    const notices = recorder.of('SocketMessage')
    expect(notices).toHaveLength(1)
    expect(notices[0]).toMatchObject({ groupId: group.id, senderId: null })
    expect(notices[0]?.message).toMatchObject({ kind: 'system', user: null, body: 'Rita joined the group.' })

    const view = await requester.get(`/api/group/${group.id}`)
    expect(view.status).toBe(200)
    expect(view.data.data.membership).toEqual({ role: 'member', joined_at: expect.stringMatching(DATE) })
    expect(view.data.data.member_count).toBe(2)
    expect(view.data.data.members.map((m: { id: number }) => m.id)).toContain(requesterUser.id)
    expect(
      view.data.data.messages.map((m: { kind: string; body: string }) => [m.kind, m.body]),
    ).toContainEqual(['system', 'Rita joined the group.'])
    expect((await owner.get(`/api/group/${group.id}`)).data.data.join_requests).toEqual([])

    // Answering again is a conflict, and announces nothing.
    recorder.clear()
    const again = await respond(owner, requestId, 'approve')
    expect(again.status).toBe(409)
    expect(again.data.message).toEqual(expect.any(String))
    expect((await respond(owner, requestId, 'decline')).status).toBe(409)
    expect(recorder.events).toEqual([])
    // Joining again answers member, not a new request.
    expect((await requester.post(`/api/group/${group.id}/join`)).data).toEqual({ data: { status: 'member' } })
    recorder.stop()
  })

  it('declines: not a member, JoinRequestResponded with accepted false, and a later ask is a new request', async () => {
    const { owner, ownerUser, group, requester, requesterUser, requestId } = await pendingRequest()
    const recorder = recordEvents(t.app, ['JoinRequestResponded', 'SocketMessage'])
    const res = await respond(owner, requestId, 'decline')
    expect(res.status).toBe(200)
    expect(res.data).toEqual({
      data: { id: requestId, group_id: group.id, user_id: requesterUser.id, status: 'declined' },
    })
    expect(recorder.events).toEqual([
      {
        name: 'JoinRequestResponded',
        payload: {
          joinRequestId: requestId,
          groupId: group.id,
          userId: requesterUser.id,
          respondedBy: ownerUser.id,
          accepted: false,
          status: 'declined',
        },
      },
    ])

    expect((await requester.get(`/api/group/${group.id}`)).status).toBe(404)
    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data.member_count).toBe(1)
    expect(view.data.data.members.map((m: { id: number }) => m.id)).not.toContain(requesterUser.id)
    expect(view.data.data.join_requests).toEqual([])
    expect(view.data.data.messages).toEqual([])

    recorder.clear()
    const again = await respond(owner, requestId, 'approve')
    expect(again.status).toBe(409)
    expect(recorder.events).toEqual([])
    expect((await requester.get(`/api/group/${group.id}`)).status).toBe(404)

    const asked = await requester.post(`/api/group/${group.id}/join`)
    expect(asked.status).toBe(200)
    expect(asked.data.data.status).toBe('pending')
    expect(asked.data.data.join_request_id).not.toBe(requestId)
    recorder.stop()
  })

  it('answers one of two simultaneous answers and 409 to the other, announcing once', async () => {
    const { owner, group, requestId } = await pendingRequest()
    const recorder = recordEvents(t.app, ['JoinRequestResponded'])
    const answers = await Promise.all([
      respond(owner, requestId, 'approve'),
      respond(owner, requestId, 'approve'),
    ])
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409])
    expect(recorder.events).toHaveLength(1)
    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data.member_count).toBe(2)
    recorder.stop()
  })

  it.each([
    [{ action: 'accept' }, 'The selected action is invalid.'],
    [{ action: '' }, 'The selected action is invalid.'],
    [{}, 'The action field is required.'],
  ])('refuses %j with 422 on action and answers nothing', async (body, message) => {
    const { owner, group, requestId } = await pendingRequest()
    const recorder = recordEvents(t.app, ['JoinRequestResponded'])
    const res = await owner.post(`/api/join-requests/${requestId}/respond`, body)
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ action: [message] })
    expect(recorder.events).toEqual([])
    expect((await owner.get(`/api/group/${group.id}`)).data.data.join_requests).toHaveLength(1)
    recorder.stop()
  })

  it('answers 403 to a member who is not the owner, and to a site admin', async () => {
    const { owner, group, requestId } = await pendingRequest()
    const member = await memberOf(owner, group.id)
    const { client: admin } = await signedInClient(t, { isAdmin: true })
    const recorder = recordEvents(t.app, ['JoinRequestResponded'])
    for (const client of [member, admin]) {
      const res = await respond(client, requestId, 'approve')
      expect(res.status).toBe(403)
    }
    expect(recorder.events).toEqual([])
    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data.join_requests.map((r: { id: number }) => r.id)).toEqual([requestId])
    recorder.stop()
  })

  it('answers 403 to a non-member of a group that is (now) public', async () => {
    const { owner, group, requestId } = await pendingRequest()
    expect((await owner.put(`/api/group/${group.id}`, { is_private: false })).status).toBe(200)
    const { client: outsider } = await signedInClient(t)
    expect((await respond(outsider, requestId, 'approve')).status).toBe(403)
  })

  it('answers 404 to the requester himself and to a stranger, who cannot see the group', async () => {
    const { owner, group, requester, requestId } = await pendingRequest()
    const { client: stranger } = await signedInClient(t)
    for (const client of [requester, stranger]) {
      for (const action of ['approve', 'decline']) {
        const res = await respond(client, requestId, action)
        expect(res.status).toBe(404)
        expect(res.data).toEqual(notFound(requestId))
      }
    }
    expect((await requester.get(`/api/group/${group.id}`)).status).toBe(404)
    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data.join_requests.map((r: { id: number }) => r.id)).toEqual([requestId])
  })

  it('answers 404 to an unknown id, and 401 to a guest', async () => {
    const { owner, requestId } = await pendingRequest()
    const res = await respond(owner, 999_999_999, 'approve')
    expect(res.status).toBe(404)
    expect(res.data).toEqual(notFound(999_999_999))
    const guest = await respond(new TestClient(t.baseUrl), requestId, 'approve')
    expect(guest.status).toBe(401)
    expect(guest.data).toEqual({ message: 'Unauthenticated.' })
  })

  it('joins the public group directly: no request, nothing to answer', async () => {
    const { client: owner } = await signedInClient(t)
    const group = await createGroup(owner)
    const { client: joiner } = await signedInClient(t)
    await joinGroup(joiner, group.id)
    expect((await owner.get(`/api/group/${group.id}`)).data.data.join_requests).toEqual([])
    expect((await joiner.get(`/api/group/${group.id}/status`)).data.data.join_request).toBeNull()
  })
})
