import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { TestClient } from '../../../../test/helpers/client.ts'
import { signedInClient } from '../../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../../test/helpers/under-test.ts'

const APP_URL = 'https://api.trading.test'
const PHOTO_URL =
  /^https:\/\/api\.trading\.test\/storage\/profile-photos\/([A-Za-z0-9_-]{40}\.(png|jpg|gif|webp))$/

// Real (tiny) images of each accepted format; what the service judges is their first bytes.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64')
const WEBP = Buffer.from('UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA', 'base64')
const JPEG = Buffer.concat([
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]),
  Buffer.from('JFIF\0\x01\x01\0\0\x01\0\x01\0\0', 'latin1'),
  Buffer.from([0xff, 0xd9]),
])

const t = appUnderTest(() => ({ env: { APP_URL } }))

const photoDir = () => join(t.config.dataDir, 'profile-photos')
const storedFiles = () => (existsSync(photoDir()) ? readdirSync(photoDir()).sort() : [])

interface Part {
  name: string
  bytes?: Buffer
  filename?: string
  type?: string
  value?: string
}

/** A multipart/form-data body, as the browser's FormData would send it. */
async function multipart(parts: Part[]): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData()
  for (const part of parts) {
    if (part.value !== undefined) form.append(part.name, part.value)
    else form.append(part.name, new Blob([part.bytes ?? Buffer.alloc(0)], { type: part.type }), part.filename)
  }
  const request = new Request('http://multipart.invalid/', { method: 'POST', body: form })
  return {
    body: Buffer.from(await request.arrayBuffer()),
    contentType: request.headers.get('content-type') ?? '',
  }
}

async function upload(client: TestClient, parts: Part[], options: { withoutCsrf?: boolean } = {}) {
  const { body, contentType } = await multipart(parts)
  return client.post('/api/user-profile/profile-photo', undefined, {
    raw: body,
    headers: { 'content-type': contentType },
    withoutCsrf: options.withoutCsrf,
  })
}

const photo = (bytes: Buffer, filename = 'me.png', type = 'image/png'): Part[] => [
  { name: 'photo', bytes, filename, type },
]

/** GETs a photo URL from the user object against the test app. */
const fetchPhoto = (url: string) => fetch(`${t.baseUrl}${new URL(url).pathname}`)

describe('POST /api/user-profile/profile-photo', () => {
  it('stores the image under DATA_DIR, answers the user with profile_photo_url, and serves it', async () => {
    const { client, user } = await signedInClient(t)
    const res = await upload(client, photo(PNG))
    expect(res.status).toBe(200)
    expect(res.data.id).toBe(user.id)
    const [, file] = res.data.profile_photo_url.match(PHOTO_URL) ?? []
    expect(file).toMatch(/\.png$/)
    expect(existsSync(join(photoDir(), file as string))).toBe(true)
    expect((await client.get('/api/user')).data.profile_photo_url).toBe(res.data.profile_photo_url)

    const served = await fetchPhoto(res.data.profile_photo_url)
    expect(served.status).toBe(200)
    expect(served.headers.get('content-type')).toBe('image/png')
    expect(served.headers.get('x-content-type-options')).toBe('nosniff')
    expect(served.headers.get('content-length')).toBe(String(PNG.length))
    expect(Buffer.from(await served.arrayBuffer())).toEqual(PNG)
  })

  it.each([
    ['JPEG', JPEG, 'jpg', 'image/jpeg'],
    ['GIF', GIF, 'gif', 'image/gif'],
    ['WebP', WEBP, 'webp', 'image/webp'],
  ])(
    'accepts %s, named and served by its bytes whatever the client called it',
    async (_, bytes, ext, type) => {
      const { client } = await signedInClient(t)
      const res = await upload(client, photo(bytes, 'holiday.txt', 'text/plain'))
      expect(res.status).toBe(200)
      expect(res.data.profile_photo_url).toMatch(new RegExp(`\\.${ext}$`))
      const served = await fetchPhoto(res.data.profile_photo_url)
      expect(served.headers.get('content-type')).toBe(type)
    },
  )

  it('refuses what is not an image, whatever its name and content type, and stores nothing', async () => {
    const { client } = await signedInClient(t)
    const before = storedFiles()
    for (const bytes of [
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
      Buffer.from('<html><script>alert(1)</script></html>'),
      PNG.subarray(0, 8),
      Buffer.alloc(0),
    ]) {
      const res = await upload(client, photo(bytes, 'me.png', 'image/png'))
      expect(res.status).toBe(422)
      expect(res.data).toEqual({
        message: 'The photo field must be an image.',
        errors: { photo: ['The photo field must be an image.'] },
      })
    }
    expect(storedFiles()).toEqual(before)
    expect((await client.get('/api/user')).data.profile_photo_url).toBeNull()
  })

  it('takes 2 MiB, and refuses one byte more with a 422 on photo', async () => {
    const { client } = await signedInClient(t)
    const exact = Buffer.concat([PNG, Buffer.alloc(2 * 1024 * 1024 - PNG.length)])
    expect((await upload(client, photo(exact))).status).toBe(200)
    const before = storedFiles()
    const res = await upload(client, photo(Buffer.concat([exact, Buffer.from([0])])))
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The photo field must not be greater than 2048 kilobytes.',
      errors: { photo: ['The photo field must not be greater than 2048 kilobytes.'] },
    })
    expect(storedFiles()).toEqual(before)
  })

  it('answers 422 "required" without a photo file, JSON or multipart', async () => {
    const { client } = await signedInClient(t)
    const required = {
      message: 'The photo field is required.',
      errors: { photo: ['The photo field is required.'] },
    }
    const json = await client.post('/api/user-profile/profile-photo', { photo: 'data:image/png;base64,AAAA' })
    expect(json.status).toBe(422)
    expect(json.data).toEqual(required)
    const otherField = await upload(client, [
      { name: 'avatar', bytes: PNG, filename: 'a.png', type: 'image/png' },
    ])
    expect(otherField.data).toEqual(required)
    // Text where the file goes is refused by its type, as Laravel's file rules do.
    const textField = await upload(client, [{ name: 'photo', value: 'not a file' }])
    expect(textField.status).toBe(422)
    expect(textField.data).toEqual({
      message: 'The photo field must be a file.',
      errors: { photo: ['The photo field must be a file.'] },
    })
  })

  it('refuses a field named prototype beside the photo, and keeps the photo it had', async () => {
    const { client } = await signedInClient(t)
    const res = await upload(client, [...photo(PNG), { name: 'prototype', value: 'x' }])
    expect(res.status).toBe(422)
    expect(res.data).toEqual({
      message: 'The prototype field is prohibited.',
      errors: { prototype: ['The prototype field is prohibited.'] },
    })
    const me = await client.get('/api/user')
    expect(me.data.profile_photo_url).toBeNull()
  })

  it('answers a broken multipart body with a 400 in Laravel shape', async () => {
    const { client } = await signedInClient(t)
    const res = await client.post('/api/user-profile/profile-photo', undefined, {
      raw: '--x\r\nContent-Disposition: form-data; name="photo"; filename="a.png"\r\n\r\nabc',
      headers: { 'content-type': 'multipart/form-data; boundary=x' },
    })
    expect(res.status).toBe(400)
    expect(res.data).toEqual({ message: 'The request body is not valid multipart form data.' })
  })

  it('replaces the previous photo and deletes its file', async () => {
    const { client } = await signedInClient(t)
    const first = await upload(client, photo(PNG))
    const second = await upload(client, photo(GIF, 'b.gif', 'image/gif'))
    expect(second.status).toBe(200)
    const [, oldFile] = first.data.profile_photo_url.match(PHOTO_URL)
    const [, newFile] = second.data.profile_photo_url.match(PHOTO_URL)
    expect(newFile).not.toBe(oldFile)
    expect(existsSync(join(photoDir(), oldFile))).toBe(false)
    expect((await fetchPhoto(first.data.profile_photo_url)).status).toBe(404)
    expect((await fetchPhoto(second.data.profile_photo_url)).status).toBe(200)
  })

  it('needs the CSRF header on a multipart request, and stores nothing without it', async () => {
    const { client } = await signedInClient(t)
    const before = storedFiles()
    const res = await upload(client, photo(PNG), { withoutCsrf: true })
    expect(res.status).toBe(419)
    expect(res.data).toEqual({ message: 'CSRF token mismatch.' })
    expect(storedFiles()).toEqual(before)
    expect((await client.get('/api/user')).data.profile_photo_url).toBeNull()
  })
})

describe('DELETE /api/user-profile/profile-photo', () => {
  it('removes the photo and its file, and answers the user', async () => {
    const { client } = await signedInClient(t)
    const uploaded = await upload(client, photo(PNG))
    const [, file] = uploaded.data.profile_photo_url.match(PHOTO_URL)
    const res = await client.delete('/api/user-profile/profile-photo')
    expect(res.status).toBe(200)
    expect(res.data.profile_photo_url).toBeNull()
    expect(existsSync(join(photoDir(), file))).toBe(false)
    // Again, with nothing left to remove.
    const again = await client.delete('/api/user-profile/profile-photo')
    expect(again.status).toBe(200)
    expect(again.data.profile_photo_url).toBeNull()
  })
})

describe("another user's photo", () => {
  it('is neither replaced nor removed by anyone else', async () => {
    const owner = await signedInClient(t)
    const other = await signedInClient(t)
    const mine = await upload(owner.client, photo(PNG))
    expect((await upload(other.client, photo(GIF, 'x.gif', 'image/gif'))).status).toBe(200)
    expect((await other.client.delete('/api/user-profile/profile-photo')).status).toBe(200)
    expect((await owner.client.get('/api/user')).data.profile_photo_url).toBe(mine.data.profile_photo_url)
    expect((await fetchPhoto(mine.data.profile_photo_url)).status).toBe(200)
  })

  it('goes with the account when it is deleted', async () => {
    const { client, password } = await signedInClient(t)
    const uploaded = await upload(client, photo(PNG))
    const [, file] = uploaded.data.profile_photo_url.match(PHOTO_URL)
    expect((await client.delete('/api/user-profile', { password })).status).toBe(200)
    expect(existsSync(join(photoDir(), file))).toBe(false)
    expect((await fetchPhoto(uploaded.data.profile_photo_url)).status).toBe(404)
  })
})

describe('GET /storage/profile-photos/{file}', () => {
  it('answers 404 in Laravel shape for unknown files and anything that is not a photo name', async () => {
    for (const path of [
      '/storage/profile-photos/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png',
      '/storage/profile-photos/..%2F..%2Fapp-key',
      '/storage/profile-photos/..%2Fdb%2FPG_VERSION',
      '/storage/profile-photos/%2E%2E%2Fapp-key.png',
      '/storage/profile-photos/app-key',
      '/storage/profile-photos/x.svg',
    ]) {
      const res = await fetch(`${t.baseUrl}${path}`, { headers: { accept: 'application/json' } })
      expect(res.status, path).toBe(404)
      expect(typeof ((await res.json()) as { message: unknown }).message).toBe('string')
    }
  })
})
