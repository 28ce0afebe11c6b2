import { Pool } from 'undici'
import { notFound } from '../errors.ts'

export interface UpstreamRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  /** Upstream path, starting with '/', each dynamic segment already passed through encodeURIComponent by the caller (use the exported `upstreamPath` helper below). */
  path: string
  /** The incoming query string as received, without '?', passed through unchanged ('' for none). */
  query?: string
  body?: unknown
  /** Sent as X-User-Id for calls made for a signed-in user. */
  userId?: number
  requestId: string
}

export interface UpstreamResponse {
  status: number
  body: { data: unknown; [key: string]: unknown }
}

export type UpstreamErrorKind = 'status' | 'timeout' | 'network' | 'invalid-body' | 'circuit-open'

/** Every failure (status >= 400, time-out, refused, reset mid-body, non-JSON, JSON without data): its message is readable and holds no secret. */
export class UpstreamError extends Error {
  readonly kind: UpstreamErrorKind
  readonly upstreamStatus?: number
  /** The low-level error code (ECONNREFUSED, UND_ERR_SOCKET...) for the log; never shown to users. */
  readonly code?: string

  constructor(
    kind: UpstreamErrorKind,
    message: string,
    details: { upstreamStatus?: number; code?: string } = {},
  ) {
    super(message)
    this.name = 'UpstreamError'
    this.kind = kind
    if (details.upstreamStatus !== undefined) this.upstreamStatus = details.upstreamStatus
    if (details.code !== undefined) this.code = details.code
  }
}

/**
 * The upstream's own failure (unreachable, too slow, a 5xx; or the breaker, open after such failures),
 * as a short label; undefined for an answer (a 4xx, a body that is not the envelope) or another error.
 * What grace answers stale for, the breaker counts and dependency health reports.
 */
export type UpstreamFault = 'timeout' | 'network' | 'status_5xx' | 'circuit_open'

export function upstreamFaultOf(error: unknown): UpstreamFault | undefined {
  if (!(error instanceof UpstreamError)) return undefined
  switch (error.kind) {
    case 'timeout':
    case 'network':
      return error.kind
    case 'circuit-open':
      return 'circuit_open'
    case 'status':
      return (error.upstreamStatus ?? 0) >= 500 ? 'status_5xx' : undefined
    default:
      return undefined
  }
}

export interface UpstreamClient {
  request(req: UpstreamRequest): Promise<UpstreamResponse>
  close(): Promise<void>
}

export interface UpstreamClientOptions {
  baseUrl: string
  token: string
  timeoutMs: number
  /** Sockets kept open to the upstream at most (default 128). */
  connections?: number
  /** Larger answers fail as invalid (default 32 MiB), so one upstream cannot exhaust our memory. */
  maxResponseBytes?: number
}

/**
 * Builds an upstream path with every interpolated value encoded as ONE segment:
 * upstreamPath`/strategies/search/${symbol}` -> '/strategies/search/a%2Fb' for 'a/b'.
 * A tagged template (not string concatenation) so a caller cannot forget to encode. An empty value
 * throws the 404 HttpError, as a route whose parameter does not match.
 */
export function upstreamPath(strings: TemplateStringsArray, ...values: (string | number)[]): string {
  let path = strings[0] ?? ''
  values.forEach((value, i) => {
    path += encodeSegment(String(value)) + (strings[i + 1] ?? '')
  })
  return path
}

/**
 * encodeURIComponent leaves '.' alone, so '.' and '..' would still be dot-segments a server may
 * resolve. An empty value has no segment form ('/strategies/' names the list): no such resource.
 */
function encodeSegment(value: string): string {
  if (value === '') throw notFound()
  const encoded = encodeURIComponent(value)
  return encoded === '.' || encoded === '..' ? encoded.replaceAll('.', '%2E') : encoded
}

/** One keep-alive pool to the upstream origin for the whole service. */
export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const url = new URL(options.baseUrl)
  // Credentials in the URL are never sent nor shown: the token is the upstream's only credential.
  const basePath = url.pathname.replace(/\/+$/, '')
  const timeoutMs = options.timeoutMs
  const pool = new Pool(url.origin, {
    connections: options.connections ?? 128,
    // Backstops for the whole-call timer below; the timer is what cuts a call.
    headersTimeout: timeoutMs + 1000,
    bodyTimeout: timeoutMs + 1000,
    maxResponseSize: options.maxResponseBytes ?? 32 * 1024 * 1024,
  })
  const authorization = `Bearer ${options.token}`

  return {
    async request(req) {
      const headers: Record<string, string> = {
        authorization,
        accept: 'application/json',
        'x-request-id': req.requestId,
      }
      if (req.userId !== undefined) headers['x-user-id'] = String(req.userId)
      let body: string | undefined
      if (req.body !== undefined) {
        body = JSON.stringify(req.body)
        headers['content-type'] = 'application/json'
      }
      const path = `${basePath}${req.path}${req.query ? `?${req.query}` : ''}`

      // One timer for the whole call, headers and body: a server that sends headers then stalls is cut too.
      const controller = new AbortController()
      let timedOut = false
      const timer = setTimeout(() => {
        timedOut = true
        controller.abort()
      }, timeoutMs)
      try {
        const res = await pool.request({ method: req.method, path, headers, body, signal: controller.signal })
        if (res.statusCode < 200 || res.statusCode >= 300) {
          // Drain so the connection goes back to the pool; the upstream's text is not shown to users.
          await res.body.dump().catch(() => {})
          throw new UpstreamError('status', `Upstream request failed with status ${res.statusCode}`, {
            upstreamStatus: res.statusCode,
          })
        }
        const text = await res.body.text()
        // A 204 has no body by definition; it reads as an answer without payload.
        if (res.statusCode === 204 && text === '') return { status: 204, body: { data: null } }
        return { status: res.statusCode, body: parseEnvelope(text) }
      } catch (error) {
        if (error instanceof UpstreamError) throw error
        if (timedOut) {
          throw new UpstreamError('timeout', `Upstream request timed out after ${timeoutMs} ms`, {
            code: 'TIMEOUT',
          })
        }
        throw networkError(error, timeoutMs)
      } finally {
        clearTimeout(timer)
      }
    },
    async close() {
      await pool.close()
    },
  }
}

/** A client for a service without an upstream configured: every call fails clearly. */
export function createUnconfiguredUpstreamClient(): UpstreamClient {
  return {
    async request() {
      throw new UpstreamError('network', 'Upstream service is not configured', { code: 'NOT_CONFIGURED' })
    },
    async close() {},
  }
}

function parseEnvelope(text: string): UpstreamResponse['body'] {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new UpstreamError('invalid-body', 'Upstream answered with invalid JSON')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !('data' in parsed)) {
    throw new UpstreamError('invalid-body', 'Upstream answer has no data')
  }
  return parsed as UpstreamResponse['body']
}

function networkError(error: unknown, timeoutMs: number): UpstreamError {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'UNKNOWN'
  switch (code) {
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'UND_ERR_CONNECT_TIMEOUT':
      return new UpstreamError('network', 'Upstream service is unreachable', { code })
    case 'UND_ERR_RES_EXCEEDED_MAX_SIZE':
      return new UpstreamError('invalid-body', 'Upstream answer is too large', { code })
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return new UpstreamError('timeout', `Upstream request timed out after ${timeoutMs} ms`, { code })
    default:
      return new UpstreamError('network', 'Upstream connection failed before the answer was complete', {
        code,
      })
  }
}
