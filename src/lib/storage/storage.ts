import type { Readable } from 'node:stream'

/** A stored file opened for sending. */
export interface StoredFile {
  stream: Readable
  size: number
}

/**
 * Where uploaded files live (profile photos, chat attachments), by a relative path such as
 * `profile-photos/<name>.png`. One interface so a shared driver (object storage) can replace the
 * local disk without touching the modules.
 */
export interface FileStorage {
  /** Writes `source` (streamed, never held whole) under a new path; answers the bytes written. */
  put(path: string, source: Readable | Buffer): Promise<number>
  /** The file at `path`, or null when there is none. */
  open(path: string): Promise<StoredFile | null>
  /** Removes the file; a missing file is not an error. */
  delete(path: string): Promise<void>
}

// Folders and names this service makes: letters, digits, `_` and `-`, a name with an extension.
// Nothing else is accepted, so no path can climb out of the storage root.
const SEGMENT = /^[A-Za-z0-9_-]{1,100}(\.[A-Za-z0-9]{1,10})?$/

/** Whether `path` is a relative path of safe segments (no `..`, no absolute path, no empty part). */
export function isSafeStoragePath(path: string): boolean {
  const segments = path.split('/')
  return segments.length <= 4 && segments.every((segment) => SEGMENT.test(segment))
}
