import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import type { FileStorage } from './storage.ts'

const MiB = 1024 * 1024
const CHUNK = 64 * 1024

/** A new path of the shape the app makes (`folder/<random>.ext`). */
export const newStoragePath = () => `contract/${randomBytes(12).toString('base64url')}.bin`

/** Chunk `i` of a generated file: distinct per chunk, so a lost or reordered chunk changes the hash. */
const chunk = (i: number, size = CHUNK) => Buffer.alloc(size, `${i}:`)

/**
 * `size` bytes made chunk by chunk as they are read, never held whole; `failure` is thrown once
 * they are out. `onChunk` hears each chunk as it is made, with the bytes made before it.
 */
export function generatedFile(
  size: number,
  options: { failure?: Error; onChunk?: (madeBefore: number) => void } = {},
): Readable {
  return Readable.from(
    (async function* () {
      for (let made = 0, i = 0; made < size; made += CHUNK, i++) {
        options.onChunk?.(made)
        yield chunk(i, Math.min(CHUNK, size - made))
      }
      if (options.failure) throw options.failure
    })(),
  )
}

/** The sha256 of what generatedFile(size) makes. */
export function generatedHash(size: number): string {
  const hash = createHash('sha256')
  for (let made = 0, i = 0; made < size; made += CHUNK, i++)
    hash.update(chunk(i, Math.min(CHUNK, size - made)))
  return hash.digest('hex')
}

/** Reads a stream to its end: its bytes' hash, length, and how it came (chunks, the largest). */
async function drain(stream: Readable) {
  const hash = createHash('sha256')
  let length = 0
  let chunks = 0
  let largest = 0
  for await (const piece of stream as AsyncIterable<Buffer>) {
    hash.update(piece)
    length += piece.length
    chunks++
    largest = Math.max(largest, piece.length)
  }
  return { hash: hash.digest('hex'), length, chunks, largest }
}

async function read(storage: FileStorage, path: string): Promise<Buffer | null> {
  const file = await storage.open(path)
  if (!file) return null
  const pieces: Buffer[] = []
  for await (const piece of file.stream as AsyncIterable<Buffer>) pieces.push(piece)
  const bytes = Buffer.concat(pieces)
  expect(file.size).toBe(bytes.length)
  return bytes
}

// Each one climbs out, names nothing, goes too deep (over 4 segments) or uses characters outside the set.
const UNSAFE_PATHS = [
  '../x',
  'a/../b',
  '/abs',
  'a//b',
  'a/',
  '',
  'a/b/c/d/e.png',
  '.hidden',
  'x.',
  'a b.png',
  'a\\b.png',
  'photo?.png',
  'é.png',
  'x.png\u0000',
]

/**
 * The FileStorage contract every driver keeps, as tests: `storage()` is called inside the tests, so
 * the driver may be made in a `beforeAll`.
 */
export function describeFileStorageContract(driver: string, storage: () => FileStorage): void {
  describe(`FileStorage contract: ${driver}`, () => {
    it('puts a Buffer or a stream, answers the bytes written, and opens them again with their size', async () => {
      const fromBuffer = newStoragePath()
      const bytes = randomBytes(10_000)
      expect(await storage().put(fromBuffer, bytes)).toBe(bytes.length)
      expect(await read(storage(), fromBuffer)).toEqual(bytes)

      const fromStream = newStoragePath()
      const pieces = [randomBytes(3), randomBytes(70_000), randomBytes(1)]
      expect(await storage().put(fromStream, Readable.from(pieces))).toBe(70_004)
      expect(await read(storage(), fromStream)).toEqual(Buffer.concat(pieces))
    })

    it('keeps an empty file', async () => {
      const path = newStoragePath()
      expect(await storage().put(path, Readable.from([]))).toBe(0)
      expect(await read(storage(), path)).toEqual(Buffer.alloc(0))
    })

    it('round-trips a large file made by a stream, and opens it as a stream of chunks', async () => {
      const path = newStoragePath()
      const size = 12 * MiB + 12_345
      expect(await storage().put(path, generatedFile(size))).toBe(size)
      const file = await storage().open(path)
      expect(file?.size).toBe(size)
      const got = await drain(file?.stream as Readable)
      expect(got).toMatchObject({ hash: generatedHash(size), length: size })
      // Streamed: many chunks, none anywhere near the whole file.
      expect(got.chunks).toBeGreaterThan(10)
      expect(got.largest).toBeLessThanOrEqual(MiB)
    })

    it('refuses to put over an existing path (EEXIST), and the original stays', async () => {
      const path = newStoragePath()
      const original = randomBytes(500)
      await storage().put(path, original)
      await expect(storage().put(path, randomBytes(500))).rejects.toMatchObject({ code: 'EEXIST' })
      await expect(storage().put(path, Readable.from([randomBytes(600)]))).rejects.toMatchObject({
        code: 'EEXIST',
      })
      expect(await read(storage(), path)).toEqual(original)
    })

    it('opens a missing path as null', async () => {
      expect(await storage().open(newStoragePath())).toBeNull()
      expect(await storage().open('never-written/x.png')).toBeNull()
    })

    it('deletes a file, and deleting a missing path is fine', async () => {
      const path = newStoragePath()
      await storage().put(path, Buffer.from('to be removed'))
      await storage().delete(path)
      expect(await storage().open(path)).toBeNull()
      await expect(storage().delete(path)).resolves.toBeUndefined()
      await expect(storage().delete(newStoragePath())).resolves.toBeUndefined()
      // The path is free again.
      expect(await storage().put(path, Buffer.from('again'))).toBe(5)
    })

    it.each(UNSAFE_PATHS)('refuses the unsafe path %j: put and delete reject, open is null', async (path) => {
      await expect(storage().put(path, Buffer.from('x'))).rejects.toThrow(/^refused storage path/)
      await expect(storage().put(path, Readable.from([Buffer.from('x')]))).rejects.toThrow(
        /^refused storage path/,
      )
      await expect(storage().delete(path)).rejects.toThrow(/^refused storage path/)
      expect(await storage().open(path)).toBeNull()
    })

    it.each([
      ['before its first byte', 0],
      ['after 100 KB', 100_000],
      ['after 6 MiB', 6 * MiB],
    ])('rejects with the error of a source that fails %s, and leaves nothing behind', async (_, size) => {
      const path = newStoragePath()
      const failure = new Error('connection reset by peer')
      await expect(storage().put(path, generatedFile(size, { failure }))).rejects.toBe(failure)
      expect(await storage().open(path)).toBeNull()
      // Nothing holds the path either: it can be written afresh.
      expect(await storage().put(path, Buffer.from('retry'))).toBe(5)
    })
  })
}
