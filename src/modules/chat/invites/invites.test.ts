import { createHash } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { createGroup, joinGroup } from '../../../../test/helpers/chat.ts'
import { TestClient } from '../../../../test/helpers/client.ts'
import { minutes } from '../../../../test/helpers/clock.ts'
import { signedInClient, uniqueEmail } from '../../../../test/helpers/factories.ts'
import type { ReceivedMail } from '../../../../test/helpers/smtp-sink.ts'
import { appUnderTest, mailSinkUnderTest } from '../../../../test/helpers/under-test.ts'
import { chatInvites } from '../../../db/schema/chat.ts'

const sink = mailSinkUnderTest()
const t = appUnderTest(() => ({ env: { MAIL_URL: sink.url } }))

const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const DAY = 86_400_000
const LINK = /http:\/\/spa\.test:5173\/invites\/([A-Za-z0-9_-]+)/
const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')

/** The token of the invitation link in a mail's text (the one the invitee would click). */
function tokenOf(mail: ReceivedMail): string {
  const match = LINK.exec(mail.text)
  if (!match?.[1]) throw new Error(`no invitation link in ${JSON.stringify(mail.text)}`)
  return match[1]
}

/** Waits for the next mail to `email` (beyond the `already` it had) and answers its token. */
async function nextToken(email: string, already: number) {
  const mail = await sink.waitForMailTo(email, already)
  return { mail, token: tokenOf(mail) }
}

/** Delivers whatever the outbox still holds, so an absent mail is truly absent. */
const settleMail = () => t.app.outbox.drain()

/** An owner (signed in, verified: inviting needs it) and a group of theirs. */
async function ownerWithGroup(options: { is_private?: boolean; name?: string; ownerName?: string } = {}) {
  const { client: owner, user } = await signedInClient(t, {
    name: options.ownerName ?? 'Olivia Owner',
    verified: true,
  })
  const group = await createGroup(owner, {
    name: options.name ?? 'Options desk',
    is_private: options.is_private ?? false,
  })
  return { owner, ownerUser: user, group }
}

/** The owner invites `email` through POST /api/invites; answers the invite JSON and the token mailed. */
async function invite(owner: TestClient, groupId: number, email: string) {
  const already = sink.to(email).length
  const res = await owner.post('/api/invites', { group_id: groupId, email })
  if (res.status !== 200) throw new Error(`invite answered ${res.status} ${res.text}`)
  const { mail, token } = await nextToken(email, already)
  expect(res.text).not.toContain(token)
  return { invite: res.data.data as { id: number; expires_at: string; email: string }, token, mail }
}

const ms = (laravelDate: string) => Date.parse(laravelDate)

describe('the invitation lifecycle, read from the SMTP sink', () => {
  it('POST /api/invites mails a link that validates and lets the invitee into a private group', async () => {
    const { owner, ownerUser, group } = await ownerWithGroup({ is_private: true, name: 'Private desk' })
    const email = uniqueEmail('invitee')
    const res = await owner.post('/api/invites', { group_id: group.id, email })
    expect(res.status).toBe(200)
    expect(res.data).toEqual({
      data: {
        id: expect.any(Number),
        group: { id: group.id, name: 'Private desk' },
        email,
        invited_by: { id: ownerUser.id, name: 'Olivia Owner' },
        status: 'pending',
        expires_at: expect.stringMatching(DATE),
        created_at: expect.stringMatching(DATE),
      },
    })
    expect(ms(res.data.data.expires_at) - ms(res.data.data.created_at)).toBe(7 * DAY)

    const mail = await sink.waitForMailTo(email, 0)
    expect(mail.to).toEqual([email])
    expect(mail.subject).toBe('You have been invited to join a chat group')
    expect(mail.text).toContain('Olivia Owner invited you to join the chat group "Private desk".')
    const token = tokenOf(mail)
    expect(token.length).toBeGreaterThanOrEqual(40)
    expect(mail.text).toContain(`http://spa.test:5173/invites/${token}`)
    expect(mail.html).toContain(`http://spa.test:5173/invites/${token}`)
    // The invite answer never carries the token.
    expect(res.text).not.toContain(token)

    const { client: invitee, user: inviteeUser } = await signedInClient(t, { email, name: 'Ivy Invitee' })
    // Before accepting, the private group does not exist for the invitee.
    expect((await invitee.get(`/api/group/${group.id}`)).status).toBe(404)

    const valid = await invitee.get(`/api/invites/validate/${token}`)
    expect(valid.status).toBe(200)
    expect(valid.data).toEqual({
      data: {
        valid: true,
        group: { id: group.id, name: 'Private desk', member_count: 1 },
        email_matches: true,
        expires_at: res.data.data.expires_at,
      },
    })
    const { client: stranger } = await signedInClient(t)
    const elsewhere = await stranger.get(`/api/invites/validate/${token}`)
    expect(elsewhere.status).toBe(200)
    expect(elsewhere.data.data).toMatchObject({ valid: true, email_matches: false })

    const accepted = await invitee.post('/api/invites/accept', { token })
    expect(accepted.status).toBe(200)
    expect(accepted.data).toEqual({
      data: expect.objectContaining({
        id: group.id,
        name: 'Private desk',
        is_private: true,
        owner_id: ownerUser.id,
        member_count: 2,
      }),
    })
    expect(accepted.text).not.toContain(token)

    const view = await invitee.get(`/api/group/${group.id}`)
    expect(view.status).toBe(200)
    expect(view.data.data.membership).toEqual({ role: 'member', joined_at: expect.stringMatching(DATE) })
    expect(view.data.data.member_count).toBe(2)
    expect(view.data.data.members.map((m: { id: number }) => m.id)).toContain(inviteeUser.id)
    expect(view.data.data.messages.at(-1)).toMatchObject({
      kind: 'system',
      user: null,
      body: 'Ivy Invitee joined the group.',
    })

    // A used link says so, and cannot be used again.
    const used = await invitee.get(`/api/invites/validate/${token}`)
    expect(used.data).toEqual({ data: { valid: false, reason: 'accepted' } })
    const again = await invitee.post('/api/invites/accept', { token })
    expect(again.status).toBe(422)
    expect(Object.keys(again.data.errors)).toEqual(['token'])
  })

  it('PUT /api/group/{g}/invite mails each address its own link, each leading into the group', async () => {
    const { owner, ownerUser, group } = await ownerWithGroup({ is_private: true, name: 'Futures pit' })
    const emails = [uniqueEmail('a'), uniqueEmail('b'), uniqueEmail('c')]
    const res = await owner.put(`/api/group/${group.id}/invite`, { emails })
    expect(res.status).toBe(200)
    expect(res.data.data).toHaveLength(3)
    expect(res.data.data).toEqual(
      emails.map((email) => ({
        id: expect.any(Number),
        group: { id: group.id, name: 'Futures pit' },
        email,
        invited_by: { id: ownerUser.id, name: 'Olivia Owner' },
        status: 'pending',
        expires_at: expect.stringMatching(DATE),
        created_at: expect.stringMatching(DATE),
      })),
    )
    expect(new Set(res.data.data.map((i: { id: number }) => i.id)).size).toBe(3)

    const tokens: string[] = []
    for (const email of emails) {
      const mail = await sink.waitForMailTo(email, 0)
      expect(mail.to).toEqual([email])
      expect(mail.subject).toBe('You have been invited to join a chat group')
      const token = tokenOf(mail)
      expect(token.length).toBeGreaterThanOrEqual(40)
      expect(res.text).not.toContain(token)
      tokens.push(token)
    }
    expect(new Set(tokens).size).toBe(3)

    // Each address gets exactly one mail.
    await settleMail()
    for (const email of emails) expect(sink.to(email)).toHaveLength(1)

    const { client: invitee, user } = await signedInClient(t, { email: emails[1] })
    const valid = await invitee.get(`/api/invites/validate/${tokens[1]}`)
    expect(valid.data.data).toMatchObject({ valid: true, email_matches: true })
    // Someone else's link, though valid, is not theirs.
    const other = await invitee.get(`/api/invites/validate/${tokens[0]}`)
    expect(other.data.data).toMatchObject({ valid: true, email_matches: false })

    const accepted = await invitee.post('/api/invites/accept', { token: tokens[1] })
    expect(accepted.status).toBe(200)
    expect(accepted.data.data).toMatchObject({ id: group.id, member_count: 2 })
    const status = await invitee.get(`/api/group/${group.id}/status`)
    expect(status.data.data).toMatchObject({ is_member: true, role: 'member' })
    const view = await owner.get(`/api/group/${group.id}`)
    expect(view.data.data.member_count).toBe(2)
    expect(view.data.data.members.map((m: { id: number }) => m.id)).toContain(user.id)
  })

  it('answers 401 to a guest on every invitation route', async () => {
    const { owner, group } = await ownerWithGroup()
    const { invite: created, token } = await invite(owner, group.id, uniqueEmail())
    const guest = new TestClient(t.baseUrl)
    const answers = [
      await guest.post('/api/invites', { group_id: group.id, email: uniqueEmail() }),
      await guest.put(`/api/group/${group.id}/invite`, { emails: [uniqueEmail()] }),
      await guest.get('/api/invites'),
      await guest.get(`/api/invites/validate/${token}`),
      await guest.post('/api/invites/accept', { token }),
      await guest.delete(`/api/invites/${created.id}`),
      await guest.post(`/api/invites/${created.id}/resend`),
    ]
    for (const res of answers) {
      expect(res.status).toBe(401)
      expect(res.data).toEqual({ message: 'Unauthenticated.' })
    }
  })

  it('lets only the owner invite: a member or a non-member of a public group 403, of a private one 404', async () => {
    const { owner, group } = await ownerWithGroup()
    const { client: member } = await signedInClient(t, { verified: true })
    await joinGroup(member, group.id)
    const { client: outsider } = await signedInClient(t, { verified: true })
    const { group: hidden } = await ownerWithGroup({ is_private: true })
    const email = uniqueEmail('nobody')

    expect((await member.post('/api/invites', { group_id: group.id, email })).status).toBe(403)
    expect((await member.put(`/api/group/${group.id}/invite`, { emails: [email] })).status).toBe(403)
    expect((await outsider.post('/api/invites', { group_id: group.id, email })).status).toBe(403)
    const privateOne = await outsider.post('/api/invites', { group_id: hidden.id, email })
    expect(privateOne.status).toBe(404)
    expect(privateOne.data).toEqual({
      message: `No query results for model [App\\Models\\Group] ${hidden.id}`,
    })
    expect((await outsider.put(`/api/group/${hidden.id}/invite`, { emails: [email] })).status).toBe(404)

    // Then the owner's own invitation is the first and only mail to that address.
    await invite(owner, group.id, email)
    await settleMail()
    expect(sink.to(email)).toHaveLength(1)
  })
})

describe('invitation 422s', () => {
  it.each([
    [{}, 'The email field is required.'],
    [{ email: '' }, 'The email field is required.'],
    [{ email: 'not-an-email' }, 'The email field must be a valid email address.'],
    [{ email: `${'x'.repeat(250)}@example.com` }, 'The email field must not be greater than 255 characters.'],
  ])('POST /api/invites refuses %j with 422 on email', async (body, first) => {
    const { owner, group } = await ownerWithGroup()
    const res = await owner.post('/api/invites', { group_id: group.id, ...body })
    expect(res.status).toBe(422)
    // One message: Laravel runs no other rule on an empty value.
    expect(res.data.errors).toEqual({ email: [first] })
  })

  it('POST /api/invites refuses a missing group_id with 422', async () => {
    const { client } = await signedInClient(t, { verified: true })
    const res = await client.post('/api/invites', { email: uniqueEmail() })
    expect(res.status).toBe(422)
    expect(Object.keys(res.data.errors)).toEqual(['group_id'])
  })

  it('PUT /api/group/{g}/invite refuses zero addresses, more than 20, and a bad one, mailing nobody', async () => {
    const { owner, group } = await ownerWithGroup()
    const none = await owner.put(`/api/group/${group.id}/invite`, { emails: [] })
    expect(none.status).toBe(422)
    expect(Object.keys(none.data.errors)).toEqual(['emails'])

    const missing = await owner.put(`/api/group/${group.id}/invite`, {})
    expect(missing.status).toBe(422)
    expect(missing.data.errors).toEqual({ emails: ['The emails field is required.'] })

    const many = Array.from({ length: 21 }, () => uniqueEmail('many'))
    const tooMany = await owner.put(`/api/group/${group.id}/invite`, { emails: many })
    expect(tooMany.status).toBe(422)
    expect(tooMany.data.errors).toEqual({ emails: ['The emails field must not have more than 20 items.'] })

    const good = uniqueEmail('good')
    const bad = await owner.put(`/api/group/${group.id}/invite`, { emails: [good, 'not-an-email'] })
    expect(bad.status).toBe(422)
    expect(bad.data.errors).toEqual({ 'emails.1': ['The emails.1 field must be a valid email address.'] })

    await settleMail()
    expect(sink.to(good)).toEqual([])
    for (const email of many) expect(sink.to(email)).toEqual([])
  })

  it('PUT /api/group/{g}/invite takes exactly 20 addresses', async () => {
    const { owner, group } = await ownerWithGroup()
    const emails = Array.from({ length: 20 }, () => uniqueEmail('twenty'))
    const res = await owner.put(`/api/group/${group.id}/invite`, { emails })
    expect(res.status).toBe(200)
    expect(res.data.data.map((i: { email: string }) => i.email)).toEqual(emails)
  })

  it('refuses to invite a current member (422 on the address) and then invites and mails nobody', async () => {
    const { owner, ownerUser, group } = await ownerWithGroup()
    const { client: member, user: memberUser } = await signedInClient(t, { verified: true })
    await joinGroup(member, group.id)
    const fresh = uniqueEmail('fresh')

    const single = await owner.post('/api/invites', {
      group_id: group.id,
      email: memberUser.email.toUpperCase(),
    })
    expect(single.status).toBe(422)
    expect(single.data.errors).toEqual({ email: ['This person is already a member of the group.'] })

    const many = await owner.put(`/api/group/${group.id}/invite`, {
      emails: [fresh, memberUser.email],
    })
    expect(many.status).toBe(422)
    expect(many.data.errors).toEqual({ 'emails.1': ['This person is already a member of the group.'] })

    // The owner is a member too.
    const self = await owner.put(`/api/group/${group.id}/invite`, { emails: [ownerUser.email] })
    expect(self.status).toBe(422)
    expect(Object.keys(self.data.errors)).toEqual(['emails.0'])

    // A later invitation arrives; none of the refused ones ever do.
    const later = uniqueEmail('later')
    await invite(owner, group.id, later)
    await settleMail()
    expect(sink.to(fresh)).toEqual([])
    expect(sink.to(memberUser.email)).toEqual([])
    // Nor was the fresh address invited: once it has an account, it has no pending invitation.
    const { client: freshClient } = await signedInClient(t, { email: fresh, verified: true })
    expect((await freshClient.get('/api/invites')).data).toEqual({ data: [] })
  })

  it('refuses to accept without a token or invite_id, and an unknown token', async () => {
    const { client } = await signedInClient(t)
    const nothing = await client.post('/api/invites/accept', {})
    expect(nothing.status).toBe(422)
    expect(Object.keys(nothing.data.errors)).toEqual(['token'])

    const unknown = await client.post('/api/invites/accept', { token: 'x'.repeat(40) })
    expect(unknown.status).toBe(422)
    expect(Object.keys(unknown.data.errors)).toEqual(['token'])

    const validation = await client.get(`/api/invites/validate/${'x'.repeat(40)}`)
    expect(validation.status).toBe(200)
    expect(validation.data).toEqual({ data: { valid: false, reason: 'unknown' } })
  })

  it('refuses a used token', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('used')
    const { token } = await invite(owner, group.id, email)
    const { client: invitee } = await signedInClient(t, { email })
    expect((await invitee.post('/api/invites/accept', { token })).status).toBe(200)
    const used = await invitee.post('/api/invites/accept', { token })
    expect(used.status).toBe(422)
    expect(Object.keys(used.data.errors)).toEqual(['token'])
  })

  it('refuses a revoked invitation', async () => {
    const { owner, group } = await ownerWithGroup({ is_private: true })
    const email = uniqueEmail('revoked')
    const { invite: created, token } = await invite(owner, group.id, email)
    expect((await owner.delete(`/api/invites/${created.id}`)).status).toBe(200)
    const { client: invitee } = await signedInClient(t, { email })
    const validation = await invitee.get(`/api/invites/validate/${token}`)
    expect(validation.data).toEqual({ data: { valid: false, reason: 'revoked' } })
    const res = await invitee.post('/api/invites/accept', { token })
    expect(res.status).toBe(422)
    expect(Object.keys(res.data.errors)).toEqual(['token'])
    expect((await invitee.get(`/api/group/${group.id}`)).status).toBe(404)
  })

  it('refuses an invitation past its 7 days', async () => {
    const { owner, group } = await ownerWithGroup({ is_private: true })
    const email = uniqueEmail('late')
    const { invite: created, token } = await invite(owner, group.id, email)
    t.clock.advance(8 * DAY)
    // Signed in after the jump: a session idle for 8 days would have ended.
    const { client: invitee } = await signedInClient(t, { email, verified: true })
    const validation = await invitee.get(`/api/invites/validate/${token}`)
    expect(validation.data).toEqual({ data: { valid: false, reason: 'expired' } })
    const byToken = await invitee.post('/api/invites/accept', { token })
    expect(byToken.status).toBe(422)
    expect(Object.keys(byToken.data.errors)).toEqual(['token'])
    const byId = await invitee.post('/api/invites/accept', { invite_id: created.id })
    expect(byId.status).toBe(422)
    expect(Object.keys(byId.data.errors)).toEqual(['invite_id'])
    expect((await invitee.get('/api/invites')).data).toEqual({ data: [] })
    expect((await invitee.get(`/api/group/${group.id}`)).status).toBe(404)
  })
})

describe('POST /api/invites/accept by invite_id', () => {
  it('accepts for a verified invitee, who then is a member of the private group', async () => {
    const { owner, group } = await ownerWithGroup({ is_private: true })
    const email = uniqueEmail('verified')
    const { invite: created } = await invite(owner, group.id, email)
    const { client: invitee, user } = await signedInClient(t, { email, verified: true })
    const res = await invitee.post('/api/invites/accept', { invite_id: created.id })
    expect(res.status).toBe(200)
    expect(res.data.data).toMatchObject({ id: group.id, is_private: true, member_count: 2 })
    const view = await invitee.get(`/api/group/${group.id}`)
    expect(view.status).toBe(200)
    expect(view.data.data.membership).toMatchObject({ role: 'member' })
    expect(view.data.data.members.map((m: { id: number }) => m.id)).toContain(user.id)

    const again = await invitee.post('/api/invites/accept', { invite_id: created.id })
    expect(again.status).toBe(422)
    expect(Object.keys(again.data.errors)).toEqual(['invite_id'])
  })

  it('refuses an unverified invitee with 403, and keeps the invitation pending', async () => {
    const { owner, group } = await ownerWithGroup({ is_private: true })
    const email = uniqueEmail('unverified')
    const { invite: created, token } = await invite(owner, group.id, email)
    const { client: invitee } = await signedInClient(t, { email })
    const res = await invitee.post('/api/invites/accept', { invite_id: created.id })
    expect(res.status).toBe(403)
    expect((await invitee.get(`/api/group/${group.id}`)).status).toBe(404)
    const validation = await invitee.get(`/api/invites/validate/${token}`)
    expect(validation.data.data).toMatchObject({ valid: true })
  })

  it("answers 404 for someone else's invite_id, and 403 for another address's token", async () => {
    const { owner, group } = await ownerWithGroup({ is_private: true })
    const email = uniqueEmail('target')
    const { invite: created, token } = await invite(owner, group.id, email)
    const { client: other } = await signedInClient(t, { verified: true })
    const byId = await other.post('/api/invites/accept', { invite_id: created.id })
    expect(byId.status).toBe(404)
    expect(byId.data).toEqual({ message: `No query results for model [App\\Models\\Invite] ${created.id}` })
    const byToken = await other.post('/api/invites/accept', { token })
    expect(byToken.status).toBe(403)
    expect((await other.get(`/api/group/${group.id}`)).status).toBe(404)
    // The owner is no exception.
    expect((await owner.post('/api/invites/accept', { invite_id: created.id })).status).toBe(404)
    // The invitation still works for its address.
    const { client: invitee } = await signedInClient(t, { email })
    expect((await invitee.post('/api/invites/accept', { token })).status).toBe(200)
  })

  it('answers 404 for an unknown invite_id', async () => {
    const { client } = await signedInClient(t, { verified: true })
    const res = await client.post('/api/invites/accept', { invite_id: 999_999_999 })
    expect(res.status).toBe(404)
    expect(res.data).toEqual({ message: 'No query results for model [App\\Models\\Invite] 999999999' })
  })
})

describe('re-inviting an address', () => {
  it('refreshes the one pending invitation: same id, a new link, the old one unknown', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('twice')
    const first = await invite(owner, group.id, email)
    t.clock.advance(minutes(5))
    const second = await invite(owner, group.id, email)
    expect(second.invite.id).toBe(first.invite.id)
    expect(second.token).not.toBe(first.token)
    expect(ms(second.invite.expires_at) - ms(first.invite.expires_at)).toBe(minutes(5))

    const third = await owner.put(`/api/group/${group.id}/invite`, { emails: [email] })
    expect(third.status).toBe(200)
    expect(third.data.data.map((i: { id: number }) => i.id)).toEqual([first.invite.id])
    const { token: latest } = await nextToken(email, 2)
    expect(third.text).not.toContain(latest)

    const { client: invitee } = await signedInClient(t, { email, verified: true })
    for (const old of [first.token, second.token]) {
      const res = await invitee.get(`/api/invites/validate/${old}`)
      expect(res.data).toEqual({ data: { valid: false, reason: 'unknown' } })
      expect((await invitee.post('/api/invites/accept', { token: old })).status).toBe(422)
    }
    const listed = await invitee.get('/api/invites')
    expect(listed.data.data.map((i: { id: number }) => i.id)).toEqual([first.invite.id])
    expect((await invitee.get(`/api/invites/validate/${latest}`)).data.data.valid).toBe(true)
    expect((await invitee.post('/api/invites/accept', { token: latest })).status).toBe(200)
  })
})

describe('GET /api/invites', () => {
  it("lists the caller's pending invitations, only once their email is verified", async () => {
    const a = await ownerWithGroup({ name: 'Group A' })
    const b = await ownerWithGroup({ name: 'Group B', is_private: true })
    const c = await ownerWithGroup({ name: 'Group C' })
    const email = uniqueEmail('lister')
    const { invite: inA, token: tokenA } = await invite(a.owner, a.group.id, email)
    const { invite: inB } = await invite(b.owner, b.group.id, email)
    const { invite: inC } = await invite(c.owner, c.group.id, email)
    await invite(a.owner, a.group.id, uniqueEmail('someone-else'))
    expect((await c.owner.delete(`/api/invites/${inC.id}`)).status).toBe(200)

    const { client: verified } = await signedInClient(t, { email: email.toUpperCase(), verified: true })
    const res = await verified.get('/api/invites')
    expect(res.status).toBe(200)
    expect(res.data.data.map((i: { id: number }) => i.id)).toEqual([inA.id, inB.id])
    expect(res.data.data[1]).toEqual({
      id: inB.id,
      group: { id: b.group.id, name: 'Group B' },
      email,
      invited_by: { id: expect.any(Number), name: 'Olivia Owner' },
      status: 'pending',
      expires_at: expect.stringMatching(DATE),
      created_at: expect.stringMatching(DATE),
    })
    expect(res.text).not.toContain(tokenA)

    // Once accepted, it is no longer listed.
    expect((await verified.post('/api/invites/accept', { invite_id: inA.id })).status).toBe(200)
    const after = await verified.get('/api/invites')
    expect(after.data.data.map((i: { id: number }) => i.id)).toEqual([inB.id])
  })

  it('lists nothing to a caller whose email is not verified', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('unproven')
    await invite(owner, group.id, email)
    const { client } = await signedInClient(t, { email })
    const res = await client.get('/api/invites')
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ data: [] })
  })
})

describe('DELETE /api/invites/{id}', () => {
  it('lets the owner revoke (status revoked), once', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('revokee')
    const { invite: created, token } = await invite(owner, group.id, email)
    const res = await owner.delete(`/api/invites/${created.id}`)
    expect(res.status).toBe(200)
    expect(res.data.data).toMatchObject({ id: created.id, email, status: 'revoked' })
    expect(res.text).not.toContain(token)
    const twice = await owner.delete(`/api/invites/${created.id}`)
    expect(twice.status).toBe(422)
    expect(twice.data.errors).toBeTypeOf('object')
    const { client: invitee } = await signedInClient(t, { email, verified: true })
    expect((await invitee.get('/api/invites')).data).toEqual({ data: [] })
  })

  it('lets the verified invitee decline (status declined), once', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('decliner')
    const { invite: created, token } = await invite(owner, group.id, email)
    const { client: invitee } = await signedInClient(t, { email, verified: true })
    const res = await invitee.delete(`/api/invites/${created.id}`)
    expect(res.status).toBe(200)
    expect(res.data.data).toMatchObject({ id: created.id, status: 'declined' })
    expect(res.text).not.toContain(token)
    expect((await invitee.get(`/api/invites/validate/${token}`)).data).toEqual({
      data: { valid: false, reason: 'declined' },
    })
    expect((await invitee.delete(`/api/invites/${created.id}`)).status).toBe(422)
    expect((await owner.delete(`/api/invites/${created.id}`)).status).toBe(422)
    expect((await invitee.post('/api/invites/accept', { token })).status).toBe(422)
  })

  it('answers 404 to anyone else, an unverified invitee and a member included', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('kept')
    const { invite: created, token } = await invite(owner, group.id, email)
    const { client: member } = await signedInClient(t)
    await joinGroup(member, group.id)
    const { client: stranger } = await signedInClient(t, { verified: true })
    const { client: admin } = await signedInClient(t, { isAdmin: true, verified: true })
    const { client: unverified } = await signedInClient(t, { email })
    for (const client of [member, stranger, admin, unverified]) {
      const res = await client.delete(`/api/invites/${created.id}`)
      expect(res.status).toBe(404)
      expect(res.data).toEqual({ message: `No query results for model [App\\Models\\Invite] ${created.id}` })
    }
    expect((await stranger.delete('/api/invites/999999999')).status).toBe(404)
    // Still pending.
    expect((await unverified.get(`/api/invites/validate/${token}`)).data.data.valid).toBe(true)
  })
})

describe('POST /api/invites/{id}/resend', () => {
  it('mails a new link, kills the old one and moves the expiry', async () => {
    const { owner, group } = await ownerWithGroup({ name: 'Resend desk' })
    const email = uniqueEmail('resend')
    const first = await invite(owner, group.id, email)
    t.clock.advance(minutes(30))
    const res = await owner.post(`/api/invites/${first.invite.id}/resend`)
    expect(res.status).toBe(200)
    expect(res.data.data).toMatchObject({ id: first.invite.id, email, status: 'pending' })
    expect(ms(res.data.data.expires_at) - ms(first.invite.expires_at)).toBe(minutes(30))

    const { mail, token } = await nextToken(email, 1)
    expect(mail.subject).toBe('You have been invited to join a chat group')
    expect(token).not.toBe(first.token)
    expect(token.length).toBeGreaterThanOrEqual(40)
    expect(res.text).not.toContain(token)

    const { client: invitee } = await signedInClient(t, { email })
    expect((await invitee.get(`/api/invites/validate/${first.token}`)).data).toEqual({
      data: { valid: false, reason: 'unknown' },
    })
    expect((await invitee.post('/api/invites/accept', { token: first.token })).status).toBe(422)
    const valid = await invitee.get(`/api/invites/validate/${token}`)
    expect(valid.data.data).toMatchObject({ valid: true, expires_at: res.data.data.expires_at })
    expect((await invitee.post('/api/invites/accept', { token })).status).toBe(200)
  })

  it('answers 404 to anyone but the owner, and mails nothing then', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('notyours')
    const { invite: created } = await invite(owner, group.id, email)
    const { client: member } = await signedInClient(t, { verified: true })
    await joinGroup(member, group.id)
    const { client: stranger } = await signedInClient(t, { verified: true })
    const { client: invitee } = await signedInClient(t, { email, verified: true })
    for (const client of [member, stranger, invitee]) {
      const res = await client.post(`/api/invites/${created.id}/resend`)
      expect(res.status).toBe(404)
      expect(res.data).toEqual({ message: `No query results for model [App\\Models\\Invite] ${created.id}` })
    }
    await settleMail()
    expect(sink.to(email)).toHaveLength(1)
  })

  it('refuses an answered invitation with 422', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('answered')
    const { invite: created, token } = await invite(owner, group.id, email)
    const { client: invitee } = await signedInClient(t, { email })
    expect((await invitee.post('/api/invites/accept', { token })).status).toBe(200)
    const res = await owner.post(`/api/invites/${created.id}/resend`)
    expect(res.status).toBe(422)
    expect(res.data.errors).toBeTypeOf('object')

    const revoked = await invite(owner, group.id, uniqueEmail('revoked'))
    expect((await owner.delete(`/api/invites/${revoked.invite.id}`)).status).toBe(200)
    expect((await owner.post(`/api/invites/${revoked.invite.id}/resend`)).status).toBe(422)
    await settleMail()
    expect(sink.to(email)).toHaveLength(1)
  })

  it('allows 3 resends an hour per invitation (the 4th is 429), then again after the hour', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('limit')
    const { invite: created } = await invite(owner, group.id, email)
    for (let i = 0; i < 3; i++) {
      expect((await owner.post(`/api/invites/${created.id}/resend`)).status).toBe(200)
    }
    // The third resend is within the invitation's limit but the address's fourth mail today: not sent.
    await sink.waitFor(() => sink.to(email).length === 3)
    const fourth = await owner.post(`/api/invites/${created.id}/resend`)
    expect(fourth.status).toBe(429)
    expect(fourth.data).toEqual({ message: 'Too Many Attempts.' })
    expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(0)
    await settleMail()
    expect(sink.to(email)).toHaveLength(3)

    // Another invitation of the same owner has its own allowance.
    const other = await invite(owner, group.id, uniqueEmail('other'))
    expect((await owner.post(`/api/invites/${other.invite.id}/resend`)).status).toBe(200)

    t.clock.advance(minutes(61))
    const later = await owner.post(`/api/invites/${created.id}/resend`)
    expect(later.status).toBe(200)
    // Not mailed (the address had its 3 today): the link it was sent last keeps working.
    await settleMail()
    expect(sink.to(email)).toHaveLength(3)
    const token = tokenOf(sink.to(email)[2] as ReceivedMail)
    const { client: invitee } = await signedInClient(t, { email })
    expect((await invitee.get(`/api/invites/validate/${token}`)).data.data.valid).toBe(true)
  })

  it('counts inviting the address again against the same limit, so it cannot get round it', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('reinvite')
    const { invite: created } = await invite(owner, group.id, email)
    await owner.post(`/api/invites/${created.id}/resend`)
    for (let i = 0; i < 2; i++) {
      expect((await owner.post('/api/invites', { group_id: group.id, email })).status).toBe(200)
    }
    const again = await owner.post('/api/invites', { group_id: group.id, email })
    expect(again.status).toBe(429)
    expect((await owner.put(`/api/group/${group.id}/invite`, { emails: [email] })).status).toBe(429)
    expect((await owner.post(`/api/invites/${created.id}/resend`)).status).toBe(429)
    await settleMail()
    // Four answered 200; the address's daily 3 were mailed.
    expect(sink.to(email)).toHaveLength(3)
  })

  it('refuses an expired invitation (422); inviting the address again revives it with a new link', async () => {
    const { owner, ownerUser, group } = await ownerWithGroup()
    const email = uniqueEmail('expired')
    const { invite: created } = await invite(owner, group.id, email)
    t.clock.advance(8 * DAY)
    // Signed in again after the jump: a session idle for 8 days would have ended.
    const owner2 = new TestClient(t.baseUrl)
    expect(
      (await owner2.post('/api/login', { email: ownerUser.email, password: 'correct horse battery' })).status,
    ).toBe(200)
    const res = await owner2.post(`/api/invites/${created.id}/resend`)
    expect(res.status).toBe(422)
    expect(Object.keys(res.data.errors)).toEqual(['invite'])
    const revived = await owner2.post('/api/invites', { group_id: group.id, email })
    expect(revived.status).toBe(200)
    expect(revived.data.data).toMatchObject({ id: created.id, status: 'pending' })
  })
})

describe('invitation spam (issue 25)', () => {
  const notVerified = { message: 'Your email address is not verified.' }

  it('refuses an inviter whose email is not verified with 403 on every mailing route, mailing nobody', async () => {
    const { client: owner } = await signedInClient(t, { verified: false })
    const group = await createGroup(owner, { name: 'Unverified desk' })
    const email = uniqueEmail('victim')
    const answers = [
      await owner.post('/api/invites', { group_id: group.id, email }),
      await owner.put(`/api/group/${group.id}/invite`, { emails: [email] }),
      await owner.post('/api/invites/1/resend'),
    ]
    for (const res of answers) {
      expect(res.status).toBe(403)
      expect(res.data).toEqual(notVerified)
    }
    await settleMail()
    expect(sink.to(email)).toEqual([])
  })

  it('mails one address 3 invitations a day across groups and inviters; the rest are answered alike, unmailed', async () => {
    const { owner } = await ownerWithGroup()
    const groups = [
      await createGroup(owner, { name: 'Spam one' }),
      await createGroup(owner, { name: 'Spam two' }),
      await createGroup(owner, { name: 'Spam three' }),
    ]
    const victim = uniqueEmail('victim')
    const answers = []
    for (const group of groups) {
      for (let i = 0; i < 4; i++)
        answers.push(await owner.post('/api/invites', { group_id: group.id, email: victim }))
    }
    expect(answers.map((res) => res.status)).toEqual(Array(12).fill(200))
    for (const res of answers) expect(res.data.data).toMatchObject({ email: victim, status: 'pending' })

    // A list naming the address and a fresh one: both invited and answered the same way, only the fresh one mailed.
    const other = await ownerWithGroup({ name: 'Another desk' })
    const fresh = uniqueEmail('fresh')
    const both = await other.owner.put(`/api/group/${other.group.id}/invite`, { emails: [victim, fresh] })
    expect(both.status).toBe(200)
    expect(both.data.data.map((i: { email: string; status: string }) => [i.email, i.status])).toEqual([
      [victim, 'pending'],
      [fresh, 'pending'],
    ])
    await sink.waitForMailTo(fresh, 0)
    await settleMail()
    expect(sink.to(victim)).toHaveLength(3)
    expect(sink.to(fresh)).toHaveLength(1)

    // Unmailed invitations are still there for the address's verified owner, and the mailed links work.
    const { client: invitee } = await signedInClient(t, { email: victim, verified: true })
    const listed = await invitee.get('/api/invites')
    expect(listed.data.data.map((i: { group: { id: number } }) => i.group.id)).toEqual([
      ...groups.map((g) => g.id),
      other.group.id,
    ])
    const mailed = tokenOf(sink.to(victim)[2] as ReceivedMail)
    expect((await invitee.get(`/api/invites/validate/${mailed}`)).data.data.valid).toBe(true)
  })

  it('takes 50 invitations a day from one inviter, whatever the groups; then 429 with Retry-After, mailing nobody', async () => {
    const { owner, group } = await ownerWithGroup()
    const batch = (n: number) => Array.from({ length: n }, () => uniqueEmail('bulk'))
    for (const emails of [batch(20), batch(20), batch(10)]) {
      expect((await owner.put(`/api/group/${group.id}/invite`, { emails })).status).toBe(200)
    }
    const late = uniqueEmail('late')
    const second = await createGroup(owner, { name: 'Second desk' })
    const refused = await owner.post('/api/invites', { group_id: second.id, email: late })
    expect(refused.status).toBe(429)
    expect(refused.data).toEqual({ message: 'Too Many Attempts.' })
    const retryAfter = Number(refused.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(86_400)
    expect(refused.headers.get('x-ratelimit-limit')).toBe('50')
    const lateList = [uniqueEmail('late')]
    expect((await owner.put(`/api/group/${group.id}/invite`, { emails: lateList })).status).toBe(429)
    await settleMail()
    expect(sink.to(late)).toEqual([])
    expect(sink.to(lateList[0] as string)).toEqual([])
  })

  it('keeps names users typed out of the subject', async () => {
    const { owner, group } = await ownerWithGroup({
      ownerName: 'Cheap pills at spam.example',
      name: 'WIN $1000 NOW visit spam.example',
    })
    const email = uniqueEmail('subject')
    const { mail } = await invite(owner, group.id, email)
    expect(mail.subject).toBe('You have been invited to join a chat group')
  })
})

describe('what the database keeps', () => {
  it('stores only the SHA-256 of the token, never the token', async () => {
    const { owner, group } = await ownerWithGroup()
    const email = uniqueEmail('hashed')
    const { invite: created, token } = await invite(owner, group.id, email)
    const [row] = await t.database.db.select().from(chatInvites).where(eq(chatInvites.id, created.id))
    expect(row).toBeDefined()
    expect(row?.tokenHash).toBe(sha256(token))
    expect(row?.tokenHash).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.stringify(row)).not.toContain(token)

    // After a resend, the stored hash is that of the new token.
    expect((await owner.post(`/api/invites/${created.id}/resend`)).status).toBe(200)
    const { token: renewed } = await nextToken(email, 1)
    const [after] = await t.database.db.select().from(chatInvites).where(eq(chatInvites.id, created.id))
    expect(after?.tokenHash).toBe(sha256(renewed))
    expect(JSON.stringify(after)).not.toContain(renewed)
  })
})
