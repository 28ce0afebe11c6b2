import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'

// s3rver ships no types: the little of it used here.
interface S3rver {
  callback(): (req: IncomingMessage, res: ServerResponse) => unknown
  store: { existsObject(bucket: string, key: string): Promise<boolean> }
  logger: { close(): void }
}
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: {
  directory: string
  silent: boolean
}) => S3rver

/** A request the server answered. */
export interface S3Request {
  method: string
  /** Path and query as sent (path style): `/bucket/key?partNumber=1&uploadId=...`. */
  url: string
  status: number
  headers: IncomingHttpHeaders
  /** The body's declared length (Content-Length), 0 without one. */
  bytes: number
}

export interface TestS3Server {
  endpoint: string
  bucket: string
  /** s3rver's built-in account; it checks the key id (not the signature). */
  credentials: { accessKeyId: string; secretAccessKey: string }
  /** Every request answered so far, in the order the answers finished. */
  requests: S3Request[]
  /** The app's environment for STORAGE_DRIVER=s3 against this server. */
  env(prefix?: string): Record<string, string>
  /** The keys in the bucket now, listed over HTTP. */
  keys(): Promise<string[]>
  close(): Promise<void>
}

const PRECONDITION_FAILED =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code>' +
  '<Message>At least one of the pre-conditions you specified did not hold</Message>' +
  '<Condition>If-None-Match</Condition></Error>'

/** `bucket/key` when the request is a write that asks If-None-Match: * (a PUT, or a multipart completion). */
function conditionalWrite(req: IncomingMessage): string | null {
  if (req.headers['if-none-match'] !== '*') return null
  const url = new URL(req.url ?? '/', 'http://s3.invalid')
  const put = req.method === 'PUT' && !url.searchParams.has('partNumber')
  const complete = req.method === 'POST' && url.searchParams.has('uploadId')
  return put || complete ? decodeURIComponent(url.pathname.slice(1)) : null
}

/**
 * s3rver (a real S3 server over HTTP, on disk in a temp folder) on a free loopback port, with one
 * bucket. s3rver ignores If-None-Match on writes; with `conditionalWrites` a conditional write to a
 * key that exists or is being written is answered 412, as AWS S3 answers it, to test the driver on
 * servers that honour the condition.
 */
export async function startS3Server(options: { conditionalWrites?: boolean } = {}): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'trading-api-s3-'))
  const s3rver = new S3rver({ directory, silent: true })
  const handle = s3rver.callback()
  const requests: S3Request[] = []
  const writing = new Set<string>()

  const refuse = (req: IncomingMessage, res: ServerResponse) => {
    req.resume()
    req.once('end', () => res.writeHead(412, { 'content-type': 'application/xml' }).end(PRECONDITION_FAILED))
  }

  const server = createServer(async (req, res) => {
    res.once('finish', () =>
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        status: res.statusCode,
        headers: req.headers,
        bytes: Number(req.headers['content-length'] ?? 0),
      }),
    )
    const target = options.conditionalWrites ? conditionalWrite(req) : null
    if (target) {
      // Claimed before the first await, so of two racing writes only one gets through.
      if (writing.has(target)) return refuse(req, res)
      writing.add(target)
      res.once('close', () => writing.delete(target))
      const [bucket = '', ...key] = target.split('/')
      if (await s3rver.store.existsObject(bucket, key.join('/'))) return refuse(req, res)
    }
    handle(req, res)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const bucket = 'trading-uploads'
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials })
  await client.send(new CreateBucketCommand({ Bucket: bucket }))

  return {
    endpoint,
    bucket,
    credentials,
    requests,
    env: (prefix) => ({
      STORAGE_DRIVER: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      S3_ACCESS_KEY_ID: credentials.accessKeyId,
      S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      ...(prefix ? { S3_PREFIX: prefix } : {}),
    }),
    async keys() {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }))
      return (listed.Contents ?? []).map((object) => object.Key ?? '').sort()
    },
    async close() {
      client.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      s3rver.logger.close()
      await rm(directory, { recursive: true, force: true })
    },
  }
}
