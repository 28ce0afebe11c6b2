import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { and, eq, sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { createGroup, joinGroup, postMessage, recordEvents } from '../../../../test/helpers/chat.ts'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'
import type { Db } from '../../../db/client.ts'
import {
  chatGroupMembers,
  chatGroups,
  chatMessageAttachments,
  chatMessages,
} from '../../../db/schema/index.ts'
import { createMessagesRepository } from './messages.repository.ts'

const t = appUnderTest()

// The smallest inputs each signature check accepts: PNG (signature + IHDR), PDF, and a Windows executable.
const PNG = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(64, 1)])
const PDF = Buffer.from('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')
const EXE = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200, 0x90)])

interface FormFile {
  name: string
  type: string
  bytes: Buffer
  field?: string
}

/** POSTs a multipart form as the app would (FormData), with the client's cookies and XSRF header. */
async function postForm(client: TestClient, fields: Record<string, string>, files: FormFile[]) {
  if (!client.cookies.has('XSRF-TOKEN')) await client.csrf()
  const form = new FormData()
  for (const [key, value] of Object.entries(fields)) form.append(key, value)
  for (const file of files) {
    form.append(file.field ?? 'attachments[]', new Blob([file.bytes], { type: file.type }), file.name)
  }
  const res = await fetch(`${t.baseUrl}/api/message`, {
    method: 'POST',
    body: form,
    headers: {
      accept: 'application/json',
      origin: client.origin,
      cookie: client.cookieHeader,
      'x-xsrf-token': decodeURIComponent(client.cookies.get('XSRF-TOKEN') ?? ''),
    },
  })
  return { status: res.status, data: (await res.json()) as any }
}

async function download(client: TestClient, url: string) {
  const res = await fetch(url.replace(t.config.appUrl, t.baseUrl), {
    headers: { cookie: client.cookieHeader },
  })
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) }
}

const storedFiles = async (messageId: number) =>
  (
    await t.database.db
      .select({ path: chatMessageAttachments.path })
      .from(chatMessageAttachments)
      .where(eq(chatMessageAttachments.messageId, messageId))
  ).map((row) => join(t.config.dataDir, row.path))

/** The attachment files in storage now. */
const filesOnDisk = () => {
  const folder = join(t.config.dataDir, 'chat-attachments')
  return existsSync(folder) ? readdirSync(folder).sort() : []
}

async function room() {
  const owner = await signedInClient(t, { name: 'Olivia' })
  const member = await signedInClient(t, { name: 'Max' })
  const group = await createGroup(owner.client)
  await joinGroup(member.client, group.id)
  return { owner, member, group }
}

describe('POST /api/message', () => {
  it('answers 201 with the message as presented and emits SocketMessage once with it', async () => {
    const { member, group } = await room()
    const recorder = recordEvents(t.app, ['SocketMessage'])
    const res = await member.client.post('/api/message', {
      group_id: group.id,
      body: '  AAPL breaking out  ',
    })
    expect(res.status).toBe(201)
    expect(res.data).toEqual({
      data: {
        id: expect.any(Number),
        group_id: group.id,
        kind: 'user',
        user: { id: member.user.id, name: 'Max', profile_photo_url: null },
        body: 'AAPL breaking out',
        attachments: [],
        created_at: expect.stringMatching(/Z$/),
      },
    })
    expect(recorder.of('SocketMessage')).toEqual([
      { messageId: res.data.data.id, senderId: member.user.id, groupId: group.id, message: res.data.data },
    ])
    recorder.stop()
  })

  it.each([
    [{ body: 'hi' }, { group_id: ['The group id field is required.'] }],
    [{ group_id: 'abc', body: 'hi' }, { group_id: ['The group id field must be an integer.'] }],
    [{ body: 'x'.repeat(5001) }, { body: ['The body field must not be greater than 5000 characters.'] }],
    [{ body: '   ' }, { body: ['The body field is required when attachments is not present.'] }],
    [{}, { body: ['The body field is required when attachments is not present.'] }],
  ])('refuses %j with 422 and stores nothing', async (body, errors) => {
    const { member, group, owner } = await room()
    const payload =
      'group_id' in body || Object.keys(errors).includes('group_id') ? body : { group_id: group.id, ...body }
    const res = await member.client.post('/api/message', payload)
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual(errors)
    const view = await owner.client.get(`/api/group/${group.id}`)
    expect(view.data.data.messages.filter((m: { kind: string }) => m.kind === 'user')).toEqual([])
  })

  it('allows 60 messages a minute per user, then 429', async () => {
    const { member, group } = await room()
    for (let i = 0; i < 60; i++)
      expect((await member.client.post('/api/message', { group_id: group.id, body: `m${i}` })).status).toBe(
        201,
      )
    const refused = await member.client.post('/api/message', { group_id: group.id, body: 'one too many' })
    expect(refused.status).toBe(429)
    expect(refused.data).toEqual({ message: 'Too Many Attempts.' })
    t.clock.advance(61_000)
    expect((await member.client.post('/api/message', { group_id: group.id, body: 'later' })).status).toBe(201)
  })
})

/**
 * Runs `change` in a transaction that holds the group's row locked, and `request` meanwhile: on
 * PostgreSQL the change commits once the request's statement waits for the lock (its snapshot is
 * then older than the change); PGlite, one connection, runs the request's statements after it.
 */
async function whileGroupLocked<T>(
  groupId: number,
  change: (tx: Db) => Promise<void>,
  request: () => Promise<T>,
) {
  const { db, kind } = t.database
  let answer: Promise<T> | undefined
  await db.transaction(async (tx) => {
    await tx.select({ id: chatGroups.id }).from(chatGroups).where(eq(chatGroups.id, groupId)).for('update')
    await change(tx)
    answer = request()
    if (kind !== 'postgres') return
    for (let tries = 0; ; tries++) {
      const waiting = (await db.execute(
        sql`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%post_group%'`,
      )) as unknown as { rows: unknown[] }
      if (waiting.rows.length > 0) break
      if (tries > 500) throw new Error('the post never waited for the group lock')
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })
  return answer as Promise<T>
}

const userMessagesIn = async (groupId: number) =>
  t.database.db
    .select({ id: chatMessages.id })
    .from(chatMessages)
    .where(and(eq(chatMessages.groupId, groupId), eq(chatMessages.kind, 'user')))

describe('POST /api/message racing a change to the group', () => {
  it('refuses, writing nothing, a post whose author was removed while it waited for the group', async () => {
    const { member, group } = await room()
    await postMessage(member.client, group.id, 'before')
    const [before] = await t.database.db.select().from(chatGroups).where(eq(chatGroups.id, group.id))
    const res = await whileGroupLocked(
      group.id,
      async (tx) => {
        await tx
          .delete(chatGroupMembers)
          .where(and(eq(chatGroupMembers.groupId, group.id), eq(chatGroupMembers.userId, member.user.id)))
      },
      () => member.client.post('/api/message', { group_id: group.id, body: 'after I left' }),
    )
    expect(res.status).toBe(403)
    expect(res.data).toEqual({ message: 'You are not a member of this group.' })
    expect((await userMessagesIn(group.id)).length).toBe(1)
    const [after] = await t.database.db.select().from(chatGroups).where(eq(chatGroups.id, group.id))
    expect(after).toEqual(before)
  })

  it('answers 404 to a post whose group was deleted while it waited for it', async () => {
    const { member, group } = await room()
    const res = await whileGroupLocked(
      group.id,
      async (tx) => {
        await tx.delete(chatGroups).where(eq(chatGroups.id, group.id))
      },
      () => member.client.post('/api/message', { group_id: group.id, body: 'into the void' }),
    )
    expect(res.status).toBe(404)
    expect(res.data).toEqual({ message: `No query results for model [App\\Models\\Group] ${group.id}` })
    expect(await userMessagesIn(group.id)).toEqual([])
  })

  it('counts a post that waited behind another on the group on the row that one committed', async () => {
    const { owner, member, group } = await room()
    let first = 0
    const res = await whileGroupLocked(
      group.id,
      async (tx) => {
        const row = await createMessagesRepository({ db: tx }).insertPosted({
          groupId: group.id,
          userId: owner.user.id,
          kind: 'user',
          body: 'first',
          createdAt: new Date(),
        })
        first = row.id
      },
      () => member.client.post('/api/message', { group_id: group.id, body: 'second' }),
    )
    expect(res.status).toBe(201)
    expect(res.data.data.id).toBeGreaterThan(first)
    const [after] = await t.database.db.select().from(chatGroups).where(eq(chatGroups.id, group.id))
    expect([after?.conversationCount, after?.lastMessageId]).toEqual([2, res.data.data.id])
    expect((await owner.client.get(`/api/group/${group.id}/status`)).data.data.unread_count).toBe(1)
    expect((await member.client.get(`/api/group/${group.id}/status`)).data.data.unread_count).toBe(1)
  })
})

describe('attachments', () => {
  it('stores files judged by their bytes, serves them to members only, and deletes them with the message', async () => {
    const { owner, member, group } = await room()
    const outsider = await signedInClient(t)
    const res = await postForm(member.client, { group_id: String(group.id), body: 'Chart and report' }, [
      { name: 'chart.png', type: 'image/png', bytes: PNG },
      { name: 'report.pdf', type: 'application/pdf', bytes: PDF },
    ])
    expect(res.status).toBe(201)
    const [image, pdf] = res.data.data.attachments
    expect(image).toEqual({
      id: expect.any(Number),
      name: 'chart.png',
      mime_type: 'image/png',
      size: PNG.length,
      url: `${t.config.appUrl}/api/message/${res.data.data.id}/attachments/${image.id}`,
    })
    expect(pdf).toMatchObject({ name: 'report.pdf', mime_type: 'application/pdf', size: PDF.length })

    const got = await download(owner.client, image.url)
    expect(got.status).toBe(200)
    expect(got.bytes.equals(PNG)).toBe(true)
    expect(got.headers.get('content-type')).toBe('image/png')
    expect(got.headers.get('x-content-type-options')).toBe('nosniff')
    expect(got.headers.get('content-disposition')).toMatch(/^inline; filename="chart.png"/)
    const pdfGot = await download(member.client, pdf.url)
    expect(pdfGot.headers.get('content-disposition')).toMatch(/^attachment; filename="report.pdf"/)
    expect(pdfGot.bytes.equals(PDF)).toBe(true)

    // A non-member of this public group is told the file does not exist.
    expect((await download(outsider.client, image.url)).status).toBe(404)

    const files = await storedFiles(res.data.data.id)
    expect(files.every((file) => existsSync(file))).toBe(true)
    expect((await member.client.delete(`/api/message/${res.data.data.id}`)).status).toBe(200)
    expect(files.some((file) => existsSync(file))).toBe(false)
    expect((await download(owner.client, image.url)).status).toBe(404)
  })

  it('refuses a renamed executable, whatever its name and type say, and keeps no file', async () => {
    const { member, group } = await room()
    const before = filesOnDisk()
    const res = await postForm(member.client, { group_id: String(group.id), body: 'look' }, [
      { name: 'chart.png', type: 'image/png', bytes: EXE },
    ])
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({
      'attachments.0': ['The attachments.0 field must be a file of type: png, jpg, gif, webp, pdf.'],
    })
    expect(filesOnDisk()).toEqual(before)
  })

  it('accepts files without text, refuses a sixth file and a file over 10 MiB', async () => {
    const { member, group } = await room()
    const before = filesOnDisk().length
    const only = await postForm(member.client, { group_id: String(group.id) }, [
      { name: 'a.png', type: 'image/png', bytes: PNG },
    ])
    expect(only.status).toBe(201)
    expect(only.data.data.body).toBe('')
    const six = Array.from({ length: 6 }, (_, i) => ({ name: `${i}.png`, type: 'image/png', bytes: PNG }))
    const tooMany = await postForm(member.client, { group_id: String(group.id), body: 'six' }, six)
    expect(tooMany.status).toBe(422)
    expect(tooMany.data.errors.attachments).toEqual([
      'The attachments field must not have more than 5 items.',
    ])
    const big = Buffer.concat([PNG, Buffer.alloc(10 * 1024 * 1024, 7)])
    const tooBig = await postForm(member.client, { group_id: String(group.id), body: 'big' }, [
      { name: 'big.png', type: 'image/png', bytes: big },
    ])
    expect(tooBig.status).toBe(422)
    expect(tooBig.data.errors).toEqual({
      'attachments.0': ['The attachments.0 field must not be greater than 10240 kilobytes.'],
    })
    // Only the accepted message's file is kept.
    expect(filesOnDisk()).toHaveLength(before + 1)
  })

  it('refuses files from someone who may not write to the group, and keeps none of them', async () => {
    const { group } = await room()
    const outsider = await signedInClient(t)
    const before = filesOnDisk()
    const res = await postForm(outsider.client, { group_id: String(group.id), body: 'spam' }, [
      { name: 'a.png', type: 'image/png', bytes: PNG },
    ])
    expect(res.status).toBe(403)
    // Refused as a writer before its files are judged: a renamed executable is a 403 too, not a 422.
    const exe = await postForm(outsider.client, { group_id: String(group.id), body: 'spam' }, [
      { name: 'chart.png', type: 'image/png', bytes: EXE },
    ])
    expect(exe.status).toBe(403)
    expect(filesOnDisk()).toEqual(before)
  })
})

describe('POST /api/message with values of the wrong kind', () => {
  const messagesIn = async (groupId: number) =>
    (await t.database.db.select().from(chatMessages).where(eq(chatMessages.groupId, groupId))).length

  it('refuses text where a file goes and a file where text goes, keeping nothing', async () => {
    const { member, group } = await room()
    const before = filesOnDisk()
    const messagesBefore = await messagesIn(group.id)
    const text = await postForm(
      member.client,
      { group_id: String(group.id), 'attachments[]': 'not a file' },
      [],
    )
    expect(text.status).toBe(422)
    expect(text.data.errors).toEqual({ 'attachments.0': ['The attachments.0 field must be a file.'] })
    const fileAsBody = await postForm(member.client, { group_id: String(group.id) }, [
      { name: 'a.png', type: 'image/png', bytes: PNG },
      { name: 'b.png', type: 'image/png', bytes: PNG, field: 'body' },
    ])
    expect(fileAsBody.status).toBe(422)
    expect(fileAsBody.data.errors).toEqual({ body: ['The body field must be a string.'] })
    // A JSON body cannot carry a file either.
    const json = await member.client.post('/api/message', { group_id: group.id, attachments: ['x'] })
    expect(json.status).toBe(422)
    expect(json.data.errors).toEqual({ 'attachments.0': ['The attachments.0 field must be a file.'] })
    expect(await messagesIn(group.id)).toBe(messagesBefore)
    expect(filesOnDisk()).toEqual(before)
  })

  it('reads a JSON group_id as sent: an array holding the id is a 422, not the group', async () => {
    const { member, group } = await room()
    const before = await messagesIn(group.id)
    const res = await member.client.post('/api/message', { group_id: [group.id], body: 'hello' })
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ group_id: ['The group id field must be an integer.'] })
    // The same id as form text is one value, as Laravel reads a form.
    const form = await postForm(member.client, { group_id: String(group.id), body: 'hello' }, [])
    expect(form.status).toBe(201)
    expect(await messagesIn(group.id)).toBe(before + 1)
  })

  it('refuses a multipart field named prototype', async () => {
    const { member, group } = await room()
    const before = await messagesIn(group.id)
    const res = await postForm(member.client, { group_id: String(group.id), body: 'x', prototype: 'x' }, [])
    expect(res.status).toBe(422)
    expect(res.data.errors).toEqual({ prototype: ['The prototype field is prohibited.'] })
    expect(await messagesIn(group.id)).toBe(before)
  })
})

describe('GET /api/message/older/{message}', () => {
  it('pages back to the first message with no gap or repeat while others keep posting', async () => {
    const { owner, member, group } = await room()
    const late = [(await signedInClient(t)).client, (await signedInClient(t)).client]
    for (const poster of late) await joinGroup(poster, group.id)
    const early = [owner.client, member.client]
    for (let i = 0; i < 40; i++) await postMessage(early[i % 2] as TestClient, group.id, `before ${i}`)
    const first = await member.client.get(`/api/group/${group.id}`)
    const seen: number[] = first.data.data.messages.map((m: { id: number }) => m.id)
    // Keep posting (new messages are newer than every page) while paging back 7 at a time.
    let posting = true
    const background = (async () => {
      let i = 0
      while (posting) await postMessage(late[i++ % 2] as TestClient, group.id, `during ${i}`)
    })()
    let cursor = seen[0] as number
    let hasMore = first.data.data.has_more_messages
    const older: number[] = []
    while (hasMore) {
      const page = await member.client.get(`/api/message/older/${cursor}?limit=7`)
      expect(page.status).toBe(200)
      const ids = page.data.data.map((m: { id: number }) => m.id)
      expect(ids).toEqual([...ids].sort((a, b) => a - b))
      older.unshift(...ids)
      hasMore = page.data.has_more
      cursor = ids[0]
    }
    posting = false
    await background
    const all = [...older, ...seen]
    expect(new Set(all).size).toBe(all.length)
    const view = await owner.client.get(`/api/group/${group.id}`)
    const stored = (
      await t.database.db.query.chatMessages.findMany({ where: (m, { eq }) => eq(m.groupId, group.id) })
    )
      .map((m) => m.id)
      .filter((id) => id <= (seen.at(-1) as number))
      .sort((a, b) => a - b)
    expect(all).toEqual(stored)
    expect(view.status).toBe(200)
  })

  it('takes limit 1..100 (422 otherwise) and answers 404 for an unknown message', async () => {
    const { member, group } = await room()
    const message = await postMessage(member.client, group.id, 'one')
    expect((await member.client.get(`/api/message/older/${message.id}?limit=0`)).status).toBe(422)
    expect((await member.client.get(`/api/message/older/${message.id}?limit=101`)).status).toBe(422)
    const res = await member.client.get(`/api/message/older/${message.id}?limit=100`)
    expect(res.status).toBe(200)
    expect(res.data.data.map((m: { body: string }) => m.body)).toEqual(['Max joined the group.'])
    expect(res.data.has_more).toBe(false)
    expect((await member.client.get('/api/message/older/999999999')).status).toBe(404)
  })
})

describe('DELETE /api/message/{message}', () => {
  it('lets the author, the owner and a site admin delete, emits MessageDeleted once, and fixes unread counts', async () => {
    const { owner, member, group } = await room()
    const admin = await signedInClient(t, { isAdmin: true })
    const mine = await postMessage(member.client, group.id, 'mine')
    const second = await postMessage(member.client, group.id, 'second')
    const third = await postMessage(member.client, group.id, 'third')
    expect((await owner.client.get(`/api/group/${group.id}/status`)).data.data.unread_count).toBe(3)
    const recorder = recordEvents(t.app, ['MessageDeleted'])
    expect((await member.client.delete(`/api/message/${mine.id}`)).status).toBe(200)
    expect((await owner.client.delete(`/api/message/${second.id}`)).status).toBe(200)
    expect((await admin.client.delete(`/api/message/${third.id}`)).status).toBe(200)
    expect(recorder.of('MessageDeleted')).toEqual([
      { messageId: mine.id, senderId: member.user.id, groupId: group.id, deletedBy: member.user.id },
      { messageId: second.id, senderId: member.user.id, groupId: group.id, deletedBy: owner.user.id },
      { messageId: third.id, senderId: member.user.id, groupId: group.id, deletedBy: admin.user.id },
    ])
    expect((await owner.client.get(`/api/group/${group.id}/status`)).data.data.unread_count).toBe(0)
    expect((await member.client.delete(`/api/message/${mine.id}`)).status).toBe(404)
    // The sidebar's last message falls back to the newest one left.
    const sidebar = await owner.client.get('/api/sidebar-conversations')
    const entry = sidebar.data.data.find((c: { group: { id: number } }) => c.group.id === group.id)
    expect(entry.last_message.body).toBe('Max joined the group.')
    recorder.stop()
  })

  it('refuses a member who is not the author', async () => {
    const { owner, member, group } = await room()
    const ownMessage = await postMessage(owner.client, group.id, 'owner writes')
    const res = await member.client.delete(`/api/message/${ownMessage.id}`)
    expect(res.status).toBe(403)
    expect(
      (await owner.client.get(`/api/group/${group.id}`)).data.data.messages.map((m: { id: number }) => m.id),
    ).toContain(ownMessage.id)
  })
})
