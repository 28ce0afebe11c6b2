import { randomBytes } from 'node:crypto'
import { pipeline, type Readable, Transform } from 'node:stream'
import { IMAGE_CONTENT_TYPES, sniffImageType } from '../../../lib/images.ts'
import { FileWorkFailed } from '../../../lib/multipart.ts'
import type { FileStorage } from '../../../lib/storage/storage.ts'

/** Where attachments are kept in the file storage. */
export const ATTACHMENT_FOLDER = 'chat-attachments'

const PDF_TYPE = 'application/pdf'

/** The accepted type of a file by its first bytes (PNG, JPEG, GIF, WebP, PDF), or null. */
export function sniffAttachmentType(head: Uint8Array): string | null {
  const image = sniffImageType(head)
  if (image) return IMAGE_CONTENT_TYPES[image]
  if (Buffer.from(head.subarray(0, 5)).toString('latin1') === '%PDF-') return PDF_TYPE
  return null
}

export const isDownloadOnly = (mimeType: string) => mimeType === PDF_TYPE

/** An uploaded file now in storage, with what its bytes said it is. */
export interface StoredUpload {
  path: string
  name: string
  size: number
  /** Null when the bytes are of no accepted type. */
  mimeType: string | null
  /** Cut off at the size limit. */
  truncated: boolean
}

// Enough bytes for every signature sniffImageType reads (WebP's is the longest: 15).
const HEAD_BYTES = 16

/** A file name fit to store and show: no path, no control characters, at most 255 characters. */
export function cleanFileName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? ''
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const cleaned = base.replace(/[\u0000-\u001f\u007f]/g, '').trim()
  return (cleaned || 'attachment').slice(0, 255)
}

/** Storage itself failed (the disk, the bucket), not the upload: a server error, logged. */
export class AttachmentStorageFailed extends FileWorkFailed {
  constructor(cause: unknown) {
    super('storing a chat attachment failed', { cause })
  }
}

/**
 * Streams one uploaded file into storage under a new random name, keeping its first bytes to judge
 * its type; never holds the file whole.
 */
export async function storeUpload(
  storage: FileStorage,
  file: Readable & { truncated?: boolean },
  name: string | undefined,
): Promise<StoredUpload> {
  const path = `${ATTACHMENT_FOLDER}/${randomBytes(30).toString('base64url')}`
  let head = Buffer.alloc(0)
  const peek = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (head.length < HEAD_BYTES) head = Buffer.concat([head, chunk.subarray(0, HEAD_BYTES - head.length)])
      done(null, chunk)
    },
  })
  // A failing upload (a broken connection) fails the store too, which then removes the partial file.
  let uploadFailed = false
  file.once('error', () => {
    uploadFailed = true
  })
  let size: number
  try {
    size = await storage.put(
      path,
      pipeline(file, peek, () => {}),
    )
  } catch (error) {
    if (uploadFailed) throw error
    throw new AttachmentStorageFailed(error)
  }
  return {
    path,
    name: cleanFileName(name),
    size,
    mimeType: sniffAttachmentType(head),
    truncated: !!file.truncated,
  }
}
