import { createHash } from 'node:crypto'
import { readFile, stat } from 'node:fs/promises'
import { resolve, sep } from 'node:path'
import type { FileStorage } from '../../lib/storage/storage.ts'
import { MAX_PHOTO_BYTES, PHOTO_FOLDER, photoFormat } from '../profile/photos/profile-photos.service.ts'

/** Why a user is imported without their photo. */
export type PhotoNote =
  | 'photo-not-copied'
  | 'photo-missing'
  | 'photo-unreadable'
  | 'photo-not-an-image'
  | 'photo-too-large'

export const PHOTO_NOTES: Record<PhotoNote, string> = {
  'photo-not-copied': 'no --photos folder was given',
  'photo-missing': 'no such file in the --photos folder',
  'photo-unreadable': 'the file could not be read',
  'photo-not-an-image': 'the file is not a PNG, JPEG, GIF or WebP image',
  'photo-too-large': `the file is larger than ${MAX_PHOTO_BYTES / 1024 / 1024} MiB`,
}

export type PhotoCopy = { path: string } | { note: PhotoNote }

/**
 * Jetstream's photos, from the original's `storage/app/public` folder (`dir`) into this service's
 * storage, checked as an upload is (by the bytes, at most 2 MiB). The stored name is derived from
 * the old user id and the bytes, as unguessable as an upload's random name, and the same on every
 * run, so an import run again after a crash writes no second copy.
 */
export function createPhotoCopier({ dir, storage }: { dir: string | undefined; storage: FileStorage }) {
  const root = dir === undefined ? undefined : resolve(dir)

  async function read(oldPath: string): Promise<Buffer | PhotoNote> {
    if (root === undefined) return 'photo-not-copied'
    const file = resolve(root, oldPath)
    // A path of the public disk, never a way out of it.
    if (!file.startsWith(root + sep)) return 'photo-missing'
    try {
      const info = await stat(file)
      if (!info.isFile()) return 'photo-missing'
      if (info.size > MAX_PHOTO_BYTES) return 'photo-too-large'
      return await readFile(file)
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'photo-missing' : 'photo-unreadable'
    }
  }

  async function store(path: string, bytes: Buffer): Promise<void> {
    const existing = await storage.open(path)
    if (existing) {
      existing.stream.destroy()
      return
    }
    await storage.put(path, bytes).catch(async (error: unknown) => {
      // Written meanwhile by another import of the same user: the same name holds the same bytes.
      const raced = await storage.open(path)
      if (!raced) throw error
      raced.stream.destroy()
    })
  }

  return {
    /** Reads and checks the user's old photo and, unless `dryRun`, stores it: its new path, or why not. */
    async copy(oldId: number, oldPath: string, { dryRun }: { dryRun: boolean }): Promise<PhotoCopy> {
      const bytes = await read(oldPath)
      if (typeof bytes === 'string') return { note: bytes }
      const format = photoFormat(bytes)
      if (format === 'too-large') return { note: 'photo-too-large' }
      if (format === 'not-an-image') return { note: 'photo-not-an-image' }
      const name = createHash('sha256')
        .update(`laravel-import|${oldId}|`)
        .update(bytes)
        .digest('base64url')
        .slice(0, 40)
      const path = `${PHOTO_FOLDER}/${name}.${format}`
      if (!dryRun) await store(path, bytes)
      return { path }
    },

    /** Removes a copied photo whose user was not imported after all. */
    discard: (path: string) => storage.delete(path),
  }
}

export type PhotoCopier = ReturnType<typeof createPhotoCopier>
