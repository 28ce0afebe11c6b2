import { pipeline, Readable, Transform } from 'node:stream'
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { type FileStorage, isSafeStoragePath } from './storage.ts'

export interface S3StorageOptions {
  bucket: string
  /** Unset: AWS itself; set for other S3-compatible servers (MinIO, R2, Ceph, ...). */
  endpoint?: string | undefined
  region: string
  /** Unset: the AWS SDK's default credential chain (environment, shared profile, instance or task role). */
  credentials?: { accessKeyId: string; secretAccessKey: string } | undefined
  /** `host/bucket/key` rather than `bucket.host/key`: what most self-hosted servers need. */
  forcePathStyle?: boolean
  /**
   * Folder every key is put under, without leading or trailing slash (`uploads` puts a photo at
   * `uploads/profile-photos/x.png`), so a bucket can hold other things too.
   */
  prefix?: string
  /** Bytes Upload gathers per part (S3's minimum is 5 MiB) ... */
  partSize?: number
  /** ... and parts in flight at once: an upload holds about (queueSize + 1) x partSize in memory. */
  queueSize?: number
  /**
   * How long a connection may take to open, and a socket stay silent (no byte either way: a server
   * that stopped answering, or a download held back by a stalled reader) before the call fails.
   * The SDK's own defaults wait for ever, so a hung bucket would hold every request that touches it.
   */
  timeouts?: { connectMs: number; idleMs: number }
}

/** Long enough for a busy bucket, short enough that nothing waits on a dead one for long. */
const S3_TIMEOUTS = Object.freeze({ connectMs: 5_000, idleMs: 30_000 })

/** A FileStorage on an S3-compatible bucket, with the HTTP client to release at shutdown. */
export interface S3Storage extends FileStorage {
  close(): void
}

const MiB = 1024 * 1024

// The same check, and the same refusal, as the local driver: no key can leave the prefix.
function checked(path: string): string {
  if (!isSafeStoragePath(path)) throw new Error(`refused storage path ${JSON.stringify(path)}`)
  return path
}

/** What the local driver's `wx` open throws for a taken path, so callers see one error either way. */
function pathTaken(path: string): Error {
  return Object.assign(new Error(`storage path ${JSON.stringify(path)} already exists`), { code: 'EEXIST' })
}

const statusOf = (error: unknown) =>
  (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode

// NoSuchKey (GET), NotFound (HEAD, which has no body to name the error): both are a 404.
const isMissing = (error: unknown) => statusOf(error) === 404

// If-None-Match refused the write: the key exists. (A 409, a conditional write that lost a race
// still in flight, says nothing sure about the key: it stays a failure of its own.)
const isTaken = (error: unknown) => statusOf(error) === 412

/** Uploaded files as objects in an S3-compatible bucket, which every instance of the app shares. */
export function createS3Storage(options: S3StorageOptions): S3Storage {
  const { bucket, prefix = '', partSize = 5 * MiB, queueSize = 2, timeouts = S3_TIMEOUTS } = options
  const keyOf = (path: string) => (prefix ? `${prefix}/${checked(path)}` : checked(path))
  const client = new S3Client({
    region: options.region,
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle ?? false,
    // A copy: the SDK marks the object it is given (`$source`), and config's is frozen.
    credentials: options.credentials && { ...options.credentials },
    // Since 2025 the SDK adds a CRC32 checksum to every upload (for a stream, an `aws-chunked` body
    // with a trailer) and checks those of downloads. Many S3-compatible servers do not speak that
    // encoding: some refuse the request, others store the chunk framing as part of the file. Only
    // operations that require a checksum get one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: timeouts.connectMs, socketTimeout: timeouts.idleMs },
  })

  async function exists(key: string): Promise<boolean> {
    try {
      await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
      return true
    } catch (error) {
      if (isMissing(error)) return false
      throw error
    }
  }

  return {
    async put(path, source) {
      const key = keyOf(path)
      // If-None-Match below makes the write atomic where the server honours it (AWS S3 since 2024,
      // and several compatible servers). Servers that ignore it would overwrite, so look first:
      // there, two writers racing for one key both pass the look and the later write wins. Names
      // here are 240 random bits, so only a bug could make two uploads race for one key.
      if (await exists(key)) throw pathTaken(path)

      let written = 0
      let sourceError: unknown
      let body: Buffer | Readable = source
      if (!Buffer.isBuffer(source)) {
        source.once('error', (error) => {
          sourceError = error
        })
        const count = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            written += chunk.length
            done(null, chunk)
          },
        })
        // A failing source destroys `count`, which fails the upload; the callback only ends the pipe.
        body = pipeline(source, count, () => {})
      }
      // Upload sends one PUT for up to partSize bytes, else a multipart upload of partSize parts: it
      // never holds the whole file, and it aborts the multipart upload (its stored parts) on failure.
      const upload = new Upload({
        client,
        params: { Bucket: bucket, Key: key, Body: body, IfNoneMatch: '*' },
        partSize,
        queueSize,
      })
      try {
        await upload.done()
      } catch (error) {
        if (body instanceof Readable) body.destroy()
        if (isTaken(error)) throw pathTaken(path)
        // When the abort fails too (a server without AbortMultipartUpload), the source's own error is the news.
        throw sourceError ?? error
      }
      return Buffer.isBuffer(source) ? source.length : written
    },

    async open(path) {
      if (!isSafeStoragePath(path)) return null
      try {
        const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: keyOf(path) }))
        const stream = object.Body
        if (!(stream instanceof Readable) || object.ContentLength === undefined) {
          throw new Error('the S3 server answered an object without a streamed body and its length')
        }
        return { stream, size: object.ContentLength }
      } catch (error) {
        if (isMissing(error)) return null
        throw error
      }
    },

    async delete(path) {
      try {
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(path) }))
      } catch (error) {
        // S3 answers 204 for a missing key; some compatible servers answer 404.
        if (!isMissing(error)) throw error
      }
    },

    close: () => client.destroy(),
  }
}
