import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp } from '../../test/helpers/build-test-app.ts'
import { createGroup, joinGroup } from '../../test/helpers/chat.ts'
import type { TestClient } from '../../test/helpers/client.ts'
import { signedInClient } from '../../test/helpers/factories.ts'
import { freePort } from '../../test/helpers/ports.ts'
import { startS3Server, type TestS3Server } from '../../test/helpers/s3-server.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'
import { chatMessageAttachments, chatMessages } from '../db/schema/index.ts'

// The same uploads and reads as the profile-photo and chat tests, with STORAGE_DRIVER=s3.
const APP_URL = 'https://api.trading.test'
const PREFIX = 'app-files'
const PHOTO_URL = /\/storage\/profile-photos\/([A-Za-z0-9_-]{40}\.(?:png|gif))$/

// Real (tiny) files of accepted types, and a renamed executable.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64')
const PDF = Buffer.from('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')
const EXE = Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200, 0x90)])

let s3: TestS3Server
beforeAll(async () => {
  s3 = await startS3Server()
})
afterAll(async () => {
  await s3?.close()
})
const t = appUnderTest(() => ({ env: { APP_URL, ...s3.env(PREFIX) } }))

/** The bucket's keys in one of the app's folders. */
const objectsIn = async (folder: string) =>
  (await s3.keys()).filter((key) => key.startsWith(`${PREFIX}/${folder}/`))

/** POSTs a FormData body as the browser sends it, with the client's session and XSRF header. */
async function postForm(
  client: TestClient,
  path: string,
  files: Record<string, [string, Buffer][]>,
  fields = {},
) {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) form.append(name, String(value))
  for (const [field, list] of Object.entries(files)) {
    for (const [filename, bytes] of list) form.append(field, new Blob([bytes]), filename)
  }
  const request = new Request('http://form.invalid/', { method: 'POST', body: form })
  return client.post(path, undefined, {
    raw: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type') ?? '' },
  })
}

/** GETs an app URL against the test app, with the client's session when given. */
async function download(url: string, client?: TestClient) {
  const cookie = client ? client.cookieHeader : ''
  const res = await fetch(url.replace(APP_URL, t.baseUrl), {
    headers: { accept: 'application/json', ...(cookie ? { cookie } : {}) },
  })
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) }
}

describe('profile photos on S3 storage', () => {
  it('stores the photo as an object, serves it back, and leaves no object once replaced or removed', async () => {
    const { client } = await signedInClient(t)
    const first = await postForm(client, '/api/user-profile/profile-photo', { photo: [['me.png', PNG]] })
    expect(first.status).toBe(200)
    const [, firstFile] = first.data.profile_photo_url.match(PHOTO_URL)
    expect(await objectsIn('profile-photos')).toContain(`${PREFIX}/profile-photos/${firstFile}`)
    expect(existsSync(join(t.config.dataDir, 'profile-photos'))).toBe(false)

    const served = await download(first.data.profile_photo_url)
    expect(served.status).toBe(200)
    expect(served.headers.get('content-type')).toBe('image/png')
    expect(served.headers.get('content-length')).toBe(String(PNG.length))
    expect(served.bytes.equals(PNG)).toBe(true)

    const second = await postForm(client, '/api/user-profile/profile-photo', { photo: [['b.gif', GIF]] })
    expect(second.status).toBe(200)
    const [, secondFile] = second.data.profile_photo_url.match(PHOTO_URL)
    const photos = await objectsIn('profile-photos')
    expect(photos).toContain(`${PREFIX}/profile-photos/${secondFile}`)
    expect(photos).not.toContain(`${PREFIX}/profile-photos/${firstFile}`)
    expect((await download(first.data.profile_photo_url)).status).toBe(404)
    expect((await download(second.data.profile_photo_url)).bytes.equals(GIF)).toBe(true)

    const removed = await client.delete('/api/user-profile/profile-photo')
    expect(removed.status).toBe(200)
    expect(removed.data.profile_photo_url).toBeNull()
    expect(await objectsIn('profile-photos')).not.toContain(`${PREFIX}/profile-photos/${secondFile}`)
    expect((await download(second.data.profile_photo_url)).status).toBe(404)
  })
})

describe('chat attachments on S3 storage', () => {
  async function room() {
    const owner = await signedInClient(t)
    const member = await signedInClient(t)
    const group = await createGroup(owner.client)
    await joinGroup(member.client, group.id)
    return { owner, member, group }
  }

  const keysOf = async (messageId: number) =>
    (
      await t.database.db
        .select({ path: chatMessageAttachments.path })
        .from(chatMessageAttachments)
        .where(eq(chatMessageAttachments.messageId, messageId))
    ).map((row) => `${PREFIX}/${row.path}`)

  it('stores attachments as objects, serves them to members only, and deletes them with the message', async () => {
    const { owner, member, group } = await room()
    const outsider = await signedInClient(t)
    const posted = await postForm(
      member.client,
      '/api/message',
      {
        'attachments[]': [
          ['chart.png', PNG],
          ['report.pdf', PDF],
        ],
      },
      { group_id: group.id, body: 'Chart and report' },
    )
    expect(posted.status).toBe(201)
    const message = posted.data.data
    const [image, pdf] = message.attachments
    const keys = await keysOf(message.id)
    expect(keys).toHaveLength(2)
    expect(await objectsIn('chat-attachments')).toEqual(expect.arrayContaining(keys))
    expect(existsSync(join(t.config.dataDir, 'chat-attachments'))).toBe(false)

    const got = await download(image.url, owner.client)
    expect(got.status).toBe(200)
    expect(got.headers.get('content-type')).toBe('image/png')
    expect(got.headers.get('content-length')).toBe(String(PNG.length))
    expect(got.bytes.equals(PNG)).toBe(true)
    const gotPdf = await download(pdf.url, member.client)
    expect(gotPdf.headers.get('content-disposition')).toMatch(/^attachment; filename="report.pdf"/)
    expect(gotPdf.bytes.equals(PDF)).toBe(true)

    // Not a member, not signed in: refused as before.
    expect((await download(image.url, outsider.client)).status).toBe(404)
    expect((await download(image.url)).status).toBe(401)

    expect((await member.client.delete(`/api/message/${message.id}`)).status).toBe(200)
    const left = await objectsIn('chat-attachments')
    expect(keys.filter((key) => left.includes(key))).toEqual([])
    expect((await download(image.url, owner.client)).status).toBe(404)
  })

  it('answers a storage outage as a server error, not as a broken body, and posts nothing', async () => {
    // The same configuration, but the bucket's server is gone.
    const down = await buildTestApp({
      env: { APP_URL, ...s3.env(PREFIX), S3_ENDPOINT: `http://127.0.0.1:${await freePort()}` },
    })
    try {
      const { client } = await signedInClient(down)
      const group = await createGroup(client)
      const res = await postForm(
        client,
        '/api/message',
        { 'attachments[]': [['chart.png', PNG]] },
        { group_id: group.id, body: 'Chart' },
      )
      expect(res.status).toBe(500)
      expect(res.data).toEqual({ message: 'Server Error' })
      const posted = await down.database.db
        .select({ body: chatMessages.body })
        .from(chatMessages)
        .where(eq(chatMessages.groupId, group.id))
      expect(posted.map((row) => row.body)).not.toContain('Chart')
    } finally {
      await down.close()
    }
  })

  it('keeps no object of a refused upload', async () => {
    const { member, group } = await room()
    const outsider = await signedInClient(t)
    const before = await objectsIn('chat-attachments')
    const sentBefore = s3.requests.length
    const renamed = await postForm(
      member.client,
      '/api/message',
      { 'attachments[]': [['chart.png', EXE]] },
      { group_id: group.id, body: 'look' },
    )
    expect(renamed.status).toBe(422)
    // The file is judged as it streams into the bucket, so it was written there, then deleted.
    const sent = s3.requests
      .slice(sentBefore)
      .map((r) => `${r.method} ${new URL(r.url, s3.endpoint).pathname}`)
    const written = sent.find((line) => line.startsWith('PUT '))?.slice(4)
    expect(written).toMatch(new RegExp(`^/${s3.bucket}/${PREFIX}/chat-attachments/`))
    expect(sent).toContain(`DELETE ${written}`)

    const stranger = await postForm(
      outsider.client,
      '/api/message',
      { 'attachments[]': [['a.png', PNG]] },
      { group_id: group.id, body: 'spam' },
    )
    expect(stranger.status).toBe(403)
    expect(await objectsIn('chat-attachments')).toEqual(before)
  })
})
