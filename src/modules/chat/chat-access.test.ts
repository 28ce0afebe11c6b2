import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createGroup, joinGroup, postMessage } from '../../../test/helpers/chat.ts'
import { type ClientResponse, TestClient } from '../../../test/helpers/client.ts'
import { signedInClient, uniqueEmail } from '../../../test/helpers/factories.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../test/helpers/under-test.ts'
import type { UserRow } from '../../db/schema/index.ts'

/**
 * The chat authorization matrix: every chat route, run as the group's owner, a member, a signed-in
 * non-member of a public group, a non-member of a private group, a site admin (no member) and a
 * guest, each against a fresh group so that destructive routes cannot spoil the next case. Each route
 * is one test listing every mismatch at once. Besides the status, no answer to the non-member of a
 * private group (or to a guest) may hold that group's name, description, members' names or messages,
 * and no answer to a non-member of a public group may hold its messages.
 */

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))

// A 1x1 PNG: its signature, the IHDR chunk, one IDAT chunk, IEND.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
)

type Role = 'owner' | 'member' | 'outsider' | 'admin' | 'guest'
type Kind = 'public' | 'private'
/** The columns of the decisions table: O, M, N on P, N on Q, A (guests always get 401). */
type Column = 'O' | 'M' | 'NP' | 'NQ' | 'A'

interface Person {
  client: TestClient
  user: UserRow
}
interface Actor {
  client: TestClient
  /** Null for the guest. */
  user: UserRow | null
}

/** One group with its owner, a member and their messages, made for one case. */
interface World {
  kind: Kind
  group: { id: number; name: string; description: string }
  owner: Person
  member: Person
  ownerMessage: { id: number; body: string }
  memberMessage: { id: number; body: string }
  /** A PNG posted by the member (only for the routes that need it). */
  attachment: { messageId: number; attachmentId: number } | null
  /** What only members may see: the group's name and description, its people, its conversation. */
  secrets: string[]
  /** What not even a non-member of a public group may see: message bodies and file names. */
  conversation: string[]
}

interface Case {
  world: World
  actor: Actor
  role: Role
  kind: Kind
}

interface Expected {
  status: number
  /** The exact JSON body, when the decisions pin it. */
  body?: unknown
  /** Further checks of a successful answer: a description of what is wrong, or null. */
  check?: (res: ClientResponse) => string | null
}

interface Outcome {
  res: ClientResponse
  expected: Partial<Record<Column, Expected>>
  /**
   * The answer may name the private group and its people (not its messages): the caller holds an
   * invitation link, or is the invitee, who was told the name by mail.
   */
  invitee?: boolean
  /** Checks the route's effect agrees with the status it answered: a problem, or null. */
  verify?: () => Promise<string | null>
}

interface RouteSpec {
  /** The registered route, as the route table names it (for the coverage check). */
  route: string
  /** What the row does, when it differs from the other rows of the same route. */
  variant?: string
  /** Defaults to every role. */
  roles?: readonly Role[]
  attachment?: boolean
  run(c: Case): Promise<Outcome>
}

const secret = (label: string) => `${label}-${randomBytes(6).toString('hex')}`

const UNAUTHENTICATED: Expected = { status: 401, body: { message: 'Unauthenticated.' } }
const FORBIDDEN: Expected = { status: 403, check: (res) => hasMessage(res) }
const notFound = (model: string, id: number): Expected => ({
  status: 404,
  body: { message: `No query results for model [App\\Models\\${model}] ${id}` },
})
const ok = (status: number, check?: Expected['check']): Expected => ({ status, check })
const every = (expected: Expected): Record<Column, Expected> => ({
  O: expected,
  M: expected,
  NP: expected,
  NQ: expected,
  A: expected,
})

function hasMessage(res: ClientResponse): string | null {
  return typeof res.data?.message === 'string' ? null : 'no `message` in the answer'
}

/** A check built from a condition on `res.data.data` and what it means. */
const dataIs =
  (what: string, condition: (data: any) => boolean): Expected['check'] =>
  (res) => {
    try {
      return condition(res.data?.data) ? null : `expected ${what}`
    } catch {
      return `expected ${what}`
    }
  }

const has = (data: object, key: string) => Object.hasOwn(data, key)

function column(role: Exclude<Role, 'guest'>, kind: Kind): Column {
  if (role === 'owner') return 'O'
  if (role === 'member') return 'M'
  if (role === 'admin') return 'A'
  return kind === 'public' ? 'NP' : 'NQ'
}

function roleLabel(role: Role, kind: Kind): string {
  if (role === 'outsider') return `non-member of a ${kind} group`
  if (role === 'guest') return `guest (${kind} group)`
  if (role === 'admin') return `site admin, not a member of a ${kind} group`
  return `${role} of a ${kind} group`
}

async function person(name: string, isAdmin = false): Promise<Person> {
  const { client, user } = await signedInClient(t, { name, verified: true, isAdmin })
  return { client, user }
}

/** Posts a message with a PNG attached as the browser app does: multipart, with its cookies and XSRF header. */
async function postWithAttachment(client: TestClient, groupId: number, body: string, fileName: string) {
  const form = new FormData()
  form.append('group_id', String(groupId))
  form.append('body', body)
  form.append('attachments[]', new Blob([PNG], { type: 'image/png' }), fileName)
  // Encoded by fetch's own multipart writer; sent through the client for its cookies and CSRF header.
  const encoded = new Request('http://multipart.invalid/', { method: 'POST', body: form })
  const res = await client.post('/api/message', undefined, {
    raw: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type') ?? '' },
  })
  if (res.status !== 201 || res.data.data.attachments.length !== 1) {
    throw new Error(`multipart message answered ${res.status} ${res.text}`)
  }
  return res.data.data as { id: number; attachments: { id: number }[] }
}

async function buildWorld(kind: Kind, withAttachment: boolean): Promise<World> {
  const owner = await person(secret('Owner'))
  const member = await person(secret('Member'))
  const name = secret('Group')
  const description = secret('About')
  const group = await createGroup(owner.client, { name, description })
  await joinGroup(member.client, group.id)
  if (kind === 'private') {
    const res = await owner.client.put(`/api/group/${group.id}`, { is_private: true })
    if (res.status !== 200) throw new Error(`making the group private answered ${res.status} ${res.text}`)
  }
  const ownerMessage = await postMessage(owner.client, group.id, secret('owner says'))
  const memberMessage = await postMessage(member.client, group.id, secret('member says'))
  const conversation = [ownerMessage.body, memberMessage.body]
  let attachment: World['attachment'] = null
  if (withAttachment) {
    const body = secret('chart caption')
    const fileName = `${secret('chart')}.png`
    const message = await postWithAttachment(member.client, group.id, body, fileName)
    attachment = { messageId: message.id, attachmentId: (message.attachments[0] as { id: number }).id }
    conversation.push(body, fileName)
  }
  return {
    kind,
    group: { id: group.id, name, description },
    owner,
    member,
    ownerMessage,
    memberMessage,
    attachment,
    secrets: [name, description, owner.user.name, member.user.name, ...conversation],
    conversation,
  }
}

async function actorFor(role: Role, world: World): Promise<Actor> {
  if (role === 'owner') return world.owner
  if (role === 'member') return world.member
  if (role === 'outsider') return person(secret('Outsider'))
  if (role === 'admin') return person(secret('Admin'), true)
  return { client: new TestClient(t.baseUrl), user: null }
}

/** The owner invites `email` to the group; answers the invite's id and the token from its mail. */
async function invite(world: World, email: string): Promise<{ id: number; token: string }> {
  const already = sink.to(email).length
  const res = await world.owner.client.post('/api/invites', { group_id: world.group.id, email })
  if (res.status !== 200) throw new Error(`invite answered ${res.status} ${res.text}`)
  await t.app.outbox.drain()
  const mail = await sink.waitForMailTo(email, already)
  const token = mail.text.match(/\/invites\/([A-Za-z0-9_-]{40,})/)?.[1]
  if (!token) throw new Error(`no invitation link in ${mail.text}`)
  return { id: res.data.data.id as number, token }
}

/** `requester` asks to join the group; for a public group, while it is briefly private. Answers the request's id. */
async function joinRequest(world: World, requester: TestClient): Promise<number> {
  const path = `/api/group/${world.group.id}`
  if (world.kind === 'public') await world.owner.client.put(path, { is_private: true })
  const res = await requester.post(`${path}/join`)
  if (world.kind === 'public') await world.owner.client.put(path, { is_private: false })
  if (res.status !== 200 || res.data.data.status !== 'pending') {
    throw new Error(`join request answered ${res.status} ${res.text}`)
  }
  return res.data.data.join_request_id as number
}

/** The ids of the messages the owner sees in the group. */
async function messageIds(world: World): Promise<number[]> {
  const res = await world.owner.client.get(`/api/group/${world.group.id}`)
  return (res.data.data.messages as { id: number }[]).map((m) => m.id)
}

const NON_MEMBERS: readonly Role[] = ['outsider', 'admin', 'guest']

const SPECS: RouteSpec[] = [
  {
    route: 'POST /api/group',
    async run({ actor }) {
      const name = secret('New group')
      const res = await actor.client.post('/api/group', { name })
      return {
        res,
        expected: every(
          ok(
            201,
            dataIs(`the new group "${name}"`, (d) => d.name === name),
          ),
        ),
      }
    },
  },
  {
    route: 'GET /api/group/:group',
    async run({ world, actor }) {
      const g = world.group.id
      const res = await actor.client.get(`/api/group/${g}`)
      return {
        res,
        expected: {
          O: ok(
            200,
            dataIs(
              'membership owner with messages, has_more_messages and join_requests',
              (d) =>
                d.membership.role === 'owner' &&
                Array.isArray(d.messages) &&
                d.messages.length > 0 &&
                has(d, 'has_more_messages') &&
                Array.isArray(d.join_requests),
            ),
          ),
          M: ok(
            200,
            dataIs(
              'membership member with messages and no join_requests',
              (d) =>
                d.membership.role === 'member' &&
                Array.isArray(d.messages) &&
                d.messages.length > 0 &&
                has(d, 'has_more_messages') &&
                !has(d, 'join_requests'),
            ),
          ),
          NP: ok(
            200,
            dataIs(
              'membership null, members, and no messages key',
              (d) =>
                d.membership === null &&
                Array.isArray(d.members) &&
                !has(d, 'messages') &&
                !has(d, 'has_more_messages') &&
                !has(d, 'join_requests'),
            ),
          ),
          NQ: notFound('Group', g),
          A: ok(
            200,
            dataIs(
              'membership null with messages and no join_requests',
              (d) =>
                d.membership === null &&
                Array.isArray(d.messages) &&
                d.messages.length > 0 &&
                !has(d, 'join_requests'),
            ),
          ),
        },
      }
    },
  },
  {
    route: 'PUT /api/group/:group',
    async run({ world, actor }) {
      const g = world.group.id
      const description = secret('Changed')
      const res = await actor.client.put(`/api/group/${g}`, { description })
      return {
        res,
        expected: {
          O: ok(
            200,
            dataIs('the new description', (d) => d.description === description),
          ),
          M: FORBIDDEN,
          NP: FORBIDDEN,
          NQ: notFound('Group', g),
          A: FORBIDDEN,
        },
        async verify() {
          const now = (await world.owner.client.get(`/api/group/${g}`)).data.data.description
          const want = res.status === 200 ? description : world.group.description
          return now === want ? null : `answered ${res.status} but the description is now "${now}"`
        },
      }
    },
  },
  {
    route: 'DELETE /api/group/:group',
    async run({ world, actor }) {
      const g = world.group.id
      const res = await actor.client.delete(`/api/group/${g}`)
      return {
        res,
        expected: {
          O: ok(200),
          M: FORBIDDEN,
          NP: FORBIDDEN,
          NQ: notFound('Group', g),
          A: ok(200),
        },
        async verify() {
          const after = (await world.owner.client.get(`/api/group/${g}`)).status
          const want = res.status === 200 ? 404 : 200
          return after === want ? null : `answered ${res.status} but the owner's view then answered ${after}`
        },
      }
    },
  },
  {
    route: 'PUT /api/group/:group/invite',
    async run({ world, actor }) {
      const g = world.group.id
      const res = await actor.client.put(`/api/group/${g}/invite`, { emails: [uniqueEmail('invitee')] })
      return {
        res,
        expected: {
          O: ok(
            200,
            dataIs('one pending invite', (d) => d.length === 1 && d[0].status === 'pending'),
          ),
          M: FORBIDDEN,
          NP: FORBIDDEN,
          NQ: notFound('Group', g),
          A: FORBIDDEN,
        },
      }
    },
  },
  {
    route: 'POST /api/group/:group/join',
    async run({ world, actor }) {
      const res = await actor.client.post(`/api/group/${world.group.id}/join`)
      const member: Expected = { status: 200, body: { data: { status: 'member' } } }
      const pending = ok(
        200,
        dataIs(
          'status pending with a join_request_id',
          (d) => d.status === 'pending' && Number.isInteger(d.join_request_id),
        ),
      )
      return {
        res,
        expected: {
          O: member,
          M: member,
          NP: member,
          NQ: pending,
          A: world.kind === 'public' ? member : pending,
        },
      }
    },
  },
  {
    route: 'DELETE /api/group/:group/leave',
    async run({ world, actor }) {
      const g = world.group.id
      const res = await actor.client.delete(`/api/group/${g}/leave`)
      return {
        res,
        expected: {
          O: {
            status: 422,
            check: (r) =>
              JSON.stringify(Object.keys(r.data?.errors ?? {})) === '["group"]'
                ? null
                : 'expected errors on `group`',
          },
          M: ok(200),
          NP: { status: 404 },
          NQ: notFound('Group', g),
          A: { status: 404 },
        },
      }
    },
  },
  {
    route: 'GET /api/group/:group/status',
    async run({ world, actor }) {
      const g = world.group.id
      const res = await actor.client.get(`/api/group/${g}/status`)
      const member = (role: string) =>
        ok(
          200,
          dataIs(`is_member true, role ${role}`, (d) => d.is_member === true && d.role === role),
        )
      const outside = ok(
        200,
        dataIs('is_member false', (d) => d.is_member === false && d.role === null),
      )
      return {
        res,
        expected: {
          O: member('owner'),
          M: member('member'),
          NP: outside,
          NQ: notFound('Group', g),
          A: outside,
        },
      }
    },
  },
  {
    route: 'GET /api/sidebar-conversations',
    async run({ world, actor }) {
      const res = await actor.client.get('/api/sidebar-conversations')
      const lists = (yes: boolean) =>
        ok(
          200,
          dataIs(`the group ${yes ? '' : 'not '}listed`, (d) =>
            yes
              ? d.some((row: any) => row.group.id === world.group.id)
              : d.every((row: any) => row.group.id !== world.group.id),
          ),
        )
      return {
        res,
        expected: { O: lists(true), M: lists(true), NP: lists(false), NQ: lists(false), A: lists(false) },
      }
    },
  },
  {
    route: 'POST /api/invites',
    async run({ world, actor }) {
      const g = world.group.id
      const email = uniqueEmail('invitee')
      const res = await actor.client.post('/api/invites', { group_id: g, email })
      return {
        res,
        expected: {
          O: ok(
            200,
            dataIs(`a pending invite of ${email}`, (d) => d.email === email && d.status === 'pending'),
          ),
          M: FORBIDDEN,
          NP: FORBIDDEN,
          NQ: notFound('Group', g),
          A: FORBIDDEN,
        },
      }
    },
  },
  {
    route: 'GET /api/invites',
    variant: "while someone else's invitation is pending",
    async run({ world, actor }) {
      await world.owner.client.post('/api/invites', { group_id: world.group.id, email: uniqueEmail('other') })
      const res = await actor.client.get('/api/invites')
      return { res, expected: every({ status: 200, body: { data: [] } }) }
    },
  },
  {
    route: 'GET /api/invites/validate/:token',
    variant: 'an unknown token',
    async run({ actor }) {
      const res = await actor.client.get(`/api/invites/validate/${randomBytes(30).toString('base64url')}`)
      return { res, expected: every({ status: 200, body: { data: { valid: false, reason: 'unknown' } } }) }
    },
  },
  {
    route: 'GET /api/invites/validate/:token',
    variant: "the live token of someone else's invitation (the link names the group)",
    async run({ world, actor }) {
      const { token } = await invite(world, uniqueEmail('holder'))
      const res = await actor.client.get(`/api/invites/validate/${token}`)
      return {
        res,
        invitee: true,
        expected: every(
          ok(
            200,
            dataIs(
              'valid, the group, email_matches false',
              (d) => d.valid === true && d.group.id === world.group.id && d.email_matches === false,
            ),
          ),
        ),
      }
    },
  },
  {
    route: 'POST /api/invites/accept',
    variant: 'the token of an invitation to another address',
    async run({ world, actor }) {
      const { token } = await invite(world, uniqueEmail('holder'))
      const res = await actor.client.post('/api/invites/accept', { token })
      return { res, expected: every(FORBIDDEN) }
    },
  },
  {
    route: 'POST /api/invites/accept',
    variant: "the invite_id of someone else's invitation",
    async run({ world, actor }) {
      const { id } = await invite(world, uniqueEmail('holder'))
      const res = await actor.client.post('/api/invites/accept', { invite_id: id })
      return { res, expected: every(notFound('Invite', id)) }
    },
  },
  {
    route: 'POST /api/invites/accept',
    variant: 'the token of an invitation to the caller',
    roles: NON_MEMBERS,
    async run({ world, actor }) {
      const { token } = await invite(world, actor.user?.email ?? uniqueEmail('guest'))
      const res = await actor.client.post('/api/invites/accept', { token })
      const joined = ok(
        200,
        dataIs('the group', (d) => d.id === world.group.id),
      )
      return {
        res,
        invitee: true,
        expected: { NP: joined, NQ: joined, A: joined },
        async verify() {
          if (res.status !== 200) return null
          const status = await actor.client.get(`/api/group/${world.group.id}/status`)
          return status.data?.data?.is_member === true ? null : `accepted but then ${status.text}`
        },
      }
    },
  },
  {
    route: 'DELETE /api/invites/:id',
    variant: 'an invitation to another address',
    async run({ world, actor }) {
      const { id } = await invite(world, uniqueEmail('holder'))
      const res = await actor.client.delete(`/api/invites/${id}`)
      const nope = notFound('Invite', id)
      return {
        res,
        expected: {
          O: ok(
            200,
            dataIs('status revoked', (d) => d.id === id && d.status === 'revoked'),
          ),
          M: nope,
          NP: nope,
          NQ: nope,
          A: nope,
        },
      }
    },
  },
  {
    route: 'DELETE /api/invites/:id',
    variant: 'an invitation to the caller (declined)',
    roles: NON_MEMBERS,
    async run({ world, actor }) {
      const { id } = await invite(world, actor.user?.email ?? uniqueEmail('guest'))
      const res = await actor.client.delete(`/api/invites/${id}`)
      const declined = ok(
        200,
        dataIs('status declined', (d) => d.id === id && d.status === 'declined'),
      )
      return { res, invitee: true, expected: { NP: declined, NQ: declined, A: declined } }
    },
  },
  {
    route: 'POST /api/invites/:id/resend',
    async run({ world, actor }) {
      const { id } = await invite(world, uniqueEmail('holder'))
      const res = await actor.client.post(`/api/invites/${id}/resend`)
      const nope = notFound('Invite', id)
      return {
        res,
        expected: {
          O: ok(
            200,
            dataIs('the pending invitation', (d) => d.id === id && d.status === 'pending'),
          ),
          M: nope,
          NP: nope,
          NQ: nope,
          A: nope,
        },
      }
    },
  },
  {
    route: 'POST /api/join-requests/:joinRequest/respond',
    variant: "someone else's request",
    async run({ world, actor }) {
      const requester = await person(secret('Requester'))
      world.secrets.push(requester.user.name)
      const id = await joinRequest(world, requester.client)
      const res = await actor.client.post(`/api/join-requests/${id}/respond`, { action: 'approve' })
      return {
        res,
        expected: {
          O: {
            status: 200,
            body: { data: { id, group_id: world.group.id, user_id: requester.user.id, status: 'approved' } },
          },
          M: FORBIDDEN,
          NP: FORBIDDEN,
          NQ: notFound('JoinRequest', id),
          A: FORBIDDEN,
        },
      }
    },
  },
  {
    route: 'POST /api/join-requests/:joinRequest/respond',
    variant: "the requester's own request",
    roles: ['outsider'],
    async run({ world, actor }) {
      const id = await joinRequest(world, actor.client)
      const res = await actor.client.post(`/api/join-requests/${id}/respond`, { action: 'approve' })
      return { res, expected: { NP: FORBIDDEN, NQ: notFound('JoinRequest', id) } }
    },
  },
  {
    route: 'POST /api/join-requests/:joinRequest/respond',
    variant: 'a request already answered',
    roles: ['owner'],
    async run({ world, actor }) {
      const requester = await person(secret('Requester'))
      const id = await joinRequest(world, requester.client)
      const first = await actor.client.post(`/api/join-requests/${id}/respond`, { action: 'decline' })
      if (first.status !== 200) throw new Error(`first answer ${first.status} ${first.text}`)
      const res = await actor.client.post(`/api/join-requests/${id}/respond`, { action: 'approve' })
      return { res, expected: { O: { status: 409 } } }
    },
  },
  {
    route: 'POST /api/message',
    async run({ world, actor }) {
      const g = world.group.id
      const body = secret('posted')
      const res = await actor.client.post('/api/message', { group_id: g, body })
      return {
        res,
        expected: {
          O: ok(
            201,
            dataIs('the message', (d) => d.body === body && d.group_id === g),
          ),
          M: ok(
            201,
            dataIs('the message', (d) => d.body === body && d.group_id === g),
          ),
          NP: FORBIDDEN,
          NQ: notFound('Group', g),
          A: FORBIDDEN,
        },
      }
    },
  },
  {
    route: 'GET /api/message/older/:message',
    async run({ world, actor }) {
      const m = world.memberMessage.id
      const res = await actor.client.get(`/api/message/older/${m}`)
      const page = ok(
        200,
        dataIs(
          "the owner's earlier message and not the anchor",
          (d) => d.some((x: any) => x.id === world.ownerMessage.id) && d.every((x: any) => x.id < m),
        ),
      )
      return {
        res,
        expected: { O: page, M: page, NP: FORBIDDEN, NQ: notFound('Message', m), A: page },
      }
    },
  },
  {
    route: 'DELETE /api/message/:message',
    variant: "someone else's message",
    async run({ world, actor, role }) {
      const m = role === 'owner' ? world.memberMessage.id : world.ownerMessage.id
      const res = await actor.client.delete(`/api/message/${m}`)
      return {
        res,
        expected: { O: ok(200), M: FORBIDDEN, NP: FORBIDDEN, NQ: notFound('Message', m), A: ok(200) },
        async verify() {
          const present = (await messageIds(world)).includes(m)
          return present === (res.status !== 200)
            ? null
            : `answered ${res.status} but the message is ${present ? 'still there' : 'gone'}`
        },
      }
    },
  },
  {
    route: 'DELETE /api/message/:message',
    variant: 'their own message',
    roles: ['owner', 'member'],
    async run({ world, actor, role }) {
      const m = role === 'owner' ? world.ownerMessage.id : world.memberMessage.id
      const res = await actor.client.delete(`/api/message/${m}`)
      return {
        res,
        expected: { O: ok(200), M: ok(200) },
        async verify() {
          const present = (await messageIds(world)).includes(m)
          return present === (res.status !== 200)
            ? null
            : `answered ${res.status} but the message is ${present ? 'still there' : 'gone'}`
        },
      }
    },
  },
  {
    route: 'GET /api/message/:message/attachments/:attachment',
    attachment: true,
    async run({ world, actor }) {
      const { messageId, attachmentId } = world.attachment as NonNullable<World['attachment']>
      const res = await actor.client.get(`/api/message/${messageId}/attachments/${attachmentId}`)
      const file = ok(200, (r) =>
        r.headers.get('content-type') === 'image/png' &&
        r.headers.get('content-length') === String(PNG.length) &&
        r.headers.get('x-content-type-options') === 'nosniff'
          ? null
          : `expected the PNG (${PNG.length} bytes, nosniff), got ${r.headers.get('content-type')} ${r.headers.get('content-length')}`,
      )
      const nope = notFound('MessageAttachment', attachmentId)
      return { res, expected: { O: file, M: file, NP: nope, NQ: nope, A: file } }
    },
  },
  ...(['', '/status'] as const).flatMap((suffix): RouteSpec[] => {
    const shows = (id: number, email: string) =>
      ok(200, (r) => {
        if (r.data?.data?.id !== id) return `expected user ${id}`
        if (r.text.includes(email) || r.text.includes('@')) return 'the answer holds an email address'
        return suffix === '/status' && typeof r.data.data.online !== 'boolean' ? 'expected `online`' : null
      })
    return [
      {
        route: `GET /api/user/:user${suffix}`,
        variant: 'a member of the group (the owner, for the member)',
        async run({ world, actor, role }) {
          const target = role === 'member' ? world.owner.user : world.member.user
          const res = await actor.client.get(`/api/user/${target.id}${suffix}`)
          const nope = notFound('User', target.id)
          return {
            res,
            expected: {
              O: shows(target.id, target.email),
              M: shows(target.id, target.email),
              NP: nope,
              NQ: nope,
              A: nope,
            },
          }
        },
      },
      {
        route: `GET /api/user/:user${suffix}`,
        variant: 'the caller',
        async run({ world, actor }) {
          const target = actor.user ?? world.member.user
          const res = await actor.client.get(`/api/user/${target.id}${suffix}`)
          return { res, expected: every(shows(target.id, target.email)) }
        },
      },
    ]
  }),
]

const ROLES: readonly Role[] = ['owner', 'member', 'outsider', 'admin', 'guest']
const KINDS: readonly Kind[] = ['public', 'private']

/** What is wrong with `res` against `expected`, empty when nothing. */
function mismatches(expected: Expected, res: ClientResponse): string[] {
  const got = `got ${res.status} ${res.text.slice(0, 300)}`
  if (res.status !== expected.status) return [`expected ${expected.status}, ${got}`]
  if (expected.body !== undefined && JSON.stringify(res.data) !== JSON.stringify(expected.body)) {
    return [`expected ${expected.status} ${JSON.stringify(expected.body)}, ${got}`]
  }
  const problem = expected.check?.(res)
  return problem ? [`${problem}, ${got}`] : []
}

/** The strings of the world `role` must not find in an answer. */
function hidden(c: Case, invitee: boolean): string[] {
  if (c.role === 'guest') return c.world.secrets
  if (c.role !== 'outsider') return []
  if (c.kind === 'private' && !invitee) return c.world.secrets
  return c.world.conversation
}

/** Runs one route as one role on a fresh world; answers the problems found. */
async function runCase(spec: RouteSpec, role: Role, kind: Kind): Promise<string[]> {
  const world = await buildWorld(kind, spec.attachment === true)
  const actor = await actorFor(role, world)
  const c: Case = { world, actor, role, kind }
  const outcome = await spec.run(c)
  const expected = role === 'guest' ? UNAUTHENTICATED : outcome.expected[column(role, kind)]
  const problems = expected ? mismatches(expected, outcome.res) : ['no expectation for this role']
  const verified = await outcome.verify?.()
  if (verified) problems.push(verified)
  for (const text of hidden(c, outcome.invitee === true)) {
    if (outcome.res.text.includes(text))
      problems.push(`the answer shows "${text}": ${outcome.res.text.slice(0, 300)}`)
  }
  return problems.map((problem) => `${roleLabel(role, kind)}: ${problem}`)
}

const title = (spec: RouteSpec) => `${spec.route}${spec.variant ? ` (${spec.variant})` : ''}`

describe('the chat authorization matrix', () => {
  it('covers every chat route the app registers', () => {
    const chat = /^\/api\/(group|invites|join-requests|message|sidebar-conversations|user\/:user)(\/|$)/
    const registered = t.app.routeTable
      .filter((route) => route.method !== 'HEAD' && chat.test(route.url))
      .map((route) => `${route.method} ${route.url}`)
    const covered = [...new Set(SPECS.map((spec) => spec.route))]
    expect(covered.sort()).toEqual([...registered].sort())
    expect(covered).toHaveLength(22)
  })

  it.each(SPECS.map((spec) => [title(spec), spec] as const))(
    '%s answers each role as decided',
    async (_title, spec) => {
      const failures: string[] = []
      for (const role of spec.roles ?? ROLES) {
        for (const kind of KINDS) failures.push(...(await runCase(spec, role, kind)))
      }
      expect(failures).toEqual([])
    },
    120_000,
  )
})
