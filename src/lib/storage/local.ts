import { mkdir, open, unlink } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { type FileStorage, isSafeStoragePath } from './storage.ts'

function checked(path: string): string {
  if (!isSafeStoragePath(path)) throw new Error(`refused storage path ${JSON.stringify(path)}`)
  return path
}

/** Files on the local disk under `root` (DATA_DIR/...). */
export function createLocalStorage(root: string): FileStorage {
  const full = (path: string) => join(root, checked(path))

  return {
    async put(path, source) {
      const file = full(path)
      await mkdir(dirname(file), { recursive: true })
      // `wx`: a new path never overwrites a file someone else is reading.
      const handle = await open(file, 'wx')
      let written = 0
      try {
        const input = Buffer.isBuffer(source) ? Readable.from([source]) : source
        const count = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            written += chunk.length
            done(null, chunk)
          },
        })
        await pipeline(input, count, handle.createWriteStream())
      } catch (error) {
        await handle.close().catch(() => {})
        await unlink(file).catch(() => {})
        throw error
      }
      return written
    },

    async open(path) {
      if (!isSafeStoragePath(path)) return null
      const handle = await open(full(path)).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return null
        throw error
      })
      if (!handle) return null
      try {
        const { size } = await handle.stat()
        return { stream: handle.createReadStream(), size }
      } catch (error) {
        await handle.close()
        throw error
      }
    },

    async delete(path) {
      await unlink(full(path)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error
      })
    },
  }
}
