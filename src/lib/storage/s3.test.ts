import { randomBytes } from 'node:crypto'
import { createServer, type Socket } from 'node:net'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type S3Request, startS3Server, type TestS3Server } from '../../../test/helpers/s3-server.ts'
import { createS3Storage, type S3Storage } from './s3.ts'
import { describeFileStorageContract, generatedFile, newStoragePath } from './storage.contract.ts'

const MiB = 1024 * 1024
const PREFIX = 'uploads'

let server: TestS3Server
let storage: S3Storage
const storageOn = (s3: TestS3Server, prefix?: string) =>
  createS3Storage({
    bucket: s3.bucket,
    endpoint: s3.endpoint,
    region: 'us-east-1',
    credentials: s3.credentials,
    forcePathStyle: true,
    prefix,
  })

beforeAll(async () => {
  server = await startS3Server()
  storage = storageOn(server, PREFIX)
})
afterAll(async () => {
  storage?.close()
  await server?.close()
})

/** The requests `s3` answered about one object, oldest first. */
const requestsFor = (s3: TestS3Server, key: string): S3Request[] =>
  s3.requests.filter((request) => new URL(request.url, s3.endpoint).pathname === `/${s3.bucket}/${key}`)
const isPart = (request: S3Request) => request.method === 'PUT' && request.url.includes('partNumber=')

describeFileStorageContract('S3 (s3rver over HTTP, keys under a prefix)', () => storage)

describe('S3 storage', () => {
  it('gives up on a bucket that stops answering, rather than holding the request for ever', async () => {
    // Accepts connections, reads what is sent, never answers: a hung server or a dead load balancer.
    const sockets = new Set<Socket>()
    const silent = createServer((socket) => {
      sockets.add(socket)
      socket.resume()
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as { port: number }
    const hung = createS3Storage({
      bucket: 'b',
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'k', secretAccessKey: 's' },
      forcePathStyle: true,
      timeouts: { connectMs: 1_000, idleMs: 200 },
    })
    try {
      const startedAt = Date.now()
      await expect(hung.open(newStoragePath())).rejects.toThrow()
      await expect(hung.put(newStoragePath(), Buffer.from('x'))).rejects.toThrow()
      // The SDK tries each call three times: a few idle timeouts, not the test's own time-out.
      expect(Date.now() - startedAt).toBeLessThan(5_000)
      expect(sockets.size).toBeGreaterThan(0)
    } finally {
      hung.close()
      for (const socket of sockets) socket.destroy()
      silent.close()
    }
  })

  it('keeps every object under the prefix, out of sight of a driver without it', async () => {
    const path = newStoragePath()
    await storage.put(path, Buffer.from('hello'))
    expect(await server.keys()).toContain(`${PREFIX}/${path}`)
    expect(await server.keys()).not.toContain(path)
    const unprefixed = storageOn(server)
    expect(await unprefixed.open(path)).toBeNull()
    unprefixed.close()
  })

  it('looks before it writes, then writes only if the key is still new (If-None-Match: *)', async () => {
    const path = newStoragePath()
    await storage.put(path, Buffer.from('hello'))
    const [look, write] = requestsFor(server, `${PREFIX}/${path}`)
    expect(look).toMatchObject({ method: 'HEAD', status: 404 })
    expect(write).toMatchObject({ method: 'PUT', status: 200 })
    expect(write?.headers['if-none-match']).toBe('*')
  })

  it('sends no checksums and no aws-chunked bodies, which many S3-compatible servers do not understand', async () => {
    const small = newStoragePath()
    const large = newStoragePath()
    await storage.put(small, Readable.from([randomBytes(1000)]))
    await storage.put(large, generatedFile(6 * MiB))
    await (await storage.open(small))?.stream.toArray()
    const sent = [...requestsFor(server, `${PREFIX}/${small}`), ...requestsFor(server, `${PREFIX}/${large}`)]
    expect(sent.length).toBeGreaterThanOrEqual(6)
    for (const request of sent) {
      const names = Object.keys(request.headers)
      expect(names.filter((name) => name.startsWith('x-amz-checksum') || name === 'x-amz-trailer')).toEqual(
        [],
      )
      expect(request.headers['x-amz-sdk-checksum-algorithm']).toBeUndefined()
      expect(request.headers['content-encoding'] ?? '').not.toContain('aws-chunked')
      expect(request.headers['x-amz-content-sha256'] ?? '').not.toMatch(/^STREAMING-/)
    }
  })

  it('uploads a large stream in parts, never holding more than (queueSize + 1) parts of it', async () => {
    const path = newStoragePath()
    const key = `${PREFIX}/${path}`
    const size = 20 * MiB
    let furthestAhead = 0
    const source = generatedFile(size, {
      onChunk(madeBefore) {
        const stored = requestsFor(server, key)
          .filter((request) => isPart(request) && request.status === 200)
          .reduce((sum, part) => sum + part.bytes, 0)
        furthestAhead = Math.max(furthestAhead, madeBefore - stored)
      },
    })
    expect(await storage.put(path, source)).toBe(size)

    const requests = requestsFor(server, key)
    const parts = requests.filter(isPart)
    expect(parts.map((part) => part.bytes)).toEqual([5 * MiB, 5 * MiB, 5 * MiB, 5 * MiB])
    const completion = requests.find(
      (request) => request.method === 'POST' && request.url.includes('uploadId='),
    )
    expect(completion?.headers['if-none-match']).toBe('*')
    // Parts of 5 MiB, 2 in flight while the next is gathered: 15 MiB at most, never the whole 20.
    expect(furthestAhead).toBeLessThanOrEqual(15 * MiB)
  })

  it('aborts the multipart upload of a source that fails after a part was sent', async () => {
    const path = newStoragePath()
    const failure = new Error('client went away')
    await expect(storage.put(path, generatedFile(7 * MiB, { failure }))).rejects.toBe(failure)
    const requests = requestsFor(server, `${PREFIX}/${path}`)
    expect(requests.filter(isPart).map((part) => part.status)).toEqual([200])
    // AbortMultipartUpload drops the stored parts (s3rver has no such operation and answers 405).
    expect(requests.some((request) => request.method === 'DELETE' && request.url.includes('uploadId='))).toBe(
      true,
    )
    expect(await server.keys()).not.toContain(`${PREFIX}/${path}`)
  })
})

describe('S3 storage on a server that honours If-None-Match', () => {
  let strict: TestS3Server
  let strictStorage: S3Storage
  beforeAll(async () => {
    strict = await startS3Server({ conditionalWrites: true })
    strictStorage = storageOn(strict)
  })
  afterAll(async () => {
    strictStorage?.close()
    await strict?.close()
  })

  it.each([
    ['a small file', () => randomBytes(2000)],
    ['a multipart stream', () => generatedFile(6 * MiB)],
  ])(
    'of two puts of %s racing for one new path, one is refused (EEXIST) and the other stays',
    async (_, make) => {
      const path = newStoragePath()
      const results = await Promise.allSettled([
        strictStorage.put(path, make()),
        strictStorage.put(path, make()),
      ])
      const refused = results.filter((result) => result.status === 'rejected')
      expect(refused).toHaveLength(1)
      expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'EEXIST' })
      // Both looked before either wrote: the server's refusal of the conditional write is what held.
      expect(requestsFor(strict, path).filter((request) => request.status === 412)).toHaveLength(1)
      const written = results.find((result) => result.status === 'fulfilled')?.value
      const file = await strictStorage.open(path)
      expect(file?.size).toBe(written)
      expect(Buffer.concat(await (file?.stream.toArray() ?? []))).toHaveLength(written as number)
    },
  )
})
