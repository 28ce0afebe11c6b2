import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import type { FastifyHttpOptions, FastifyInstance, FastifyServerFactory } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import type { UserRow } from '../db/schema/index.ts'
import { everyAnswerHeaders, type HeaderPairs, requestIdOf } from '../lib/answer-headers.ts'
import type { ActiveSession } from '../lib/sessions/session-store.ts'
import { authRefusal, type ThrottleRule } from './guards.ts'

/**
 * A read this process can answer from memory: a signed-in route with no path parameters whose
 * answer, when in memory, is the same for every request of the same user without a query.
 */
export interface WarmRead {
  /** The route's exact path; the same path with anything after it (a query, a slash) goes the usual way. */
  url: string
  auth: 'session' | 'verified'
  throttle?: ThrottleRule
  /** The route's own headers on such an answer, before X-Request-Id. */
  headers: HeaderPairs
  /** The answer's JSON text when this process holds it for this user, else undefined (nothing is loaded). */
  inMemory(user: UserRow): string | undefined
}

declare module 'fastify' {
  interface FastifyInstance {
    warmReads: {
      add(read: WarmRead): void
      /** Answers the lane has given since the start (tests tell by it which way a request went). */
      readonly served: number
    }
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void
/** Takes the request (true) or leaves it to Fastify (false); a request it took may still be handed to `fastify` later. */
type Lane = (req: IncomingMessage, res: ServerResponse, fastify: Handler) => boolean
const LANE = Symbol('warm-read lane')
type LaneServer = Server & { [LANE]?: Lane }

/**
 * Fastify's own HTTP/1 server (as fastify/lib/server.js makes it, with its `http` options and the same time-outs), its
 * requests offered to the warm-read lane first once the plugin below installs it.
 */
export const warmReadServerFactory: FastifyServerFactory = (handler, options: FastifyHttpOptions<Server>) => {
  const server: LaneServer = createServer(options.http ?? {}, (req, res) => {
    const lane = server[LANE]
    if (lane === undefined || !lane(req, res, handler)) handler(req, res)
  })
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout
  if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout
  if (options.connectionTimeout !== undefined) server.setTimeout(options.connectionTimeout)
  if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket
  return server
}

/**
 * The warm-read lane: a signed-in GET of a registered path whose session, user and answer this
 * process holds in memory is answered before Fastify's request lifecycle, with the very status,
 * headers and body that lifecycle would give it, and the same access-log line and metrics. Any
 * other request, and any step that would need more I/O than the throttle's count, a refusal or a
 * look at anything else, goes to Fastify untouched: nothing is counted for it here.
 *
 * Without Redis everything is in memory and the answer is written at once. With Redis, the answers
 * held in memory are the near copies of entries only a TTL ends (lib/cache/failover.ts), and the
 * count is one round trip, after which the answer is written.
 */
async function warmReadsPlugin(app: FastifyInstance, { config }: { config: Config }) {
  const reads = new Map<string, WarmRead>()
  let served = 0
  app.decorate('warmReads', {
    add(read: WarmRead) {
      if (read.url.includes(':') || read.url.includes('?')) throw new Error(`${read.url} is no exact path`)
      reads.set(read.url, read)
    },
    get served() {
      return served
    },
  })
  // request.ip as Fastify gives it: behind TRUSTED_PROXIES, the client their X-Forwarded-For names.
  const trust = config.trustedProxies.length > 0 ? proxyAddr.compile([...config.trustedProxies]) : undefined
  const clientIp = (req: IncomingMessage) => (trust ? proxyAddr(req, trust) : req.socket.remoteAddress)
  const answerHeaders = everyAnswerHeaders(config.appUrl)
  const { draining } = app.shutdown

  // The same entry answers many requests in a row: its length is measured once. (Sent as a string:
  // Node writes headers and a string body in one write, a Buffer body with writev.)
  let lastBody = ''
  let lastLength = '0'

  /** What the lane found in memory for a request, before its count. */
  interface Found {
    read: WarmRead
    signedIn: { session: ActiveSession; user: UserRow }
    body: string
    ip: string | undefined
    started: number
  }

  const find = (req: IncomingMessage): Found | undefined => {
    if (req.method !== 'GET') return undefined
    const read = reads.get(req.url ?? '')
    // While draining, answers close their connections (app.ts): Fastify's way. A GET with a body is
    // left to Fastify's body handling.
    if (read === undefined || draining.aborted) return undefined
    const { headers } = req
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined)
      return undefined
    const started = performance.now()
    const signedIn = app.sessionControl.signedInFromMemory(headers.cookie)
    if (signedIn === undefined || authRefusal(read.auth, signedIn.user)) return undefined
    const body = read.inMemory(signedIn.user)
    if (body === undefined) return undefined
    return { read, signedIn, body, ip: clientIp(req), started }
  }

  const write = (req: IncomingMessage, res: ServerResponse, found: Found, limits: HeaderPairs) => {
    const { read, signedIn, body, ip, started } = found
    const { headers } = req
    // In the order Fastify's hooks set them: CORS, throttle, the route's, then every answer's own.
    const requestId = requestIdOf(headers['x-request-id'])
    const raw: string[] = []
    for (const [name, value] of app.corsAnswerHeaders(headers.origin)) raw.push(name, value)
    for (const [name, value] of limits) raw.push(name, value)
    for (const [name, value] of read.headers) raw.push(name, value)
    raw.push('x-request-id', requestId)
    for (const [name, value] of answerHeaders) raw.push(name, value)
    for (const line of app.sessionControl.responseCookies(signedIn.session)) raw.push('set-cookie', line)
    if (body !== lastBody) {
      lastBody = body
      lastLength = String(Buffer.byteLength(body))
    }
    raw.push('content-length', lastLength)
    // Draining may have begun while the count was in Redis.
    if (draining.aborted) raw.push('connection', 'close')
    res.writeHead(200, raw)
    res.end(body)
    served += 1
    app.recordAnswered({
      requestId,
      method: 'GET',
      url: read.url,
      route: read.url,
      status: 200,
      elapsedMs: performance.now() - started,
      ip,
      userId: signedIn.user.id,
    })
  }

  // A failure here must not take the process down (this runs outside Fastify's error handling):
  // before the answer started, the request goes to Fastify; after, its connection is dropped.
  const failed = (error: unknown, req: IncomingMessage, res: ServerResponse, fastify: Handler) => {
    app.log.error({ err: error, url: req.url }, 'warm-read lane failed')
    if (res.headersSent) res.destroy()
    else fastify(req, res)
  }

  const lane: Lane = (req, res, fastify) => {
    try {
      const found = find(req)
      if (found === undefined) return false
      const { read, signedIn, ip } = found
      // Last, as it counts: past the limit nothing stays counted and Fastify answers the 429.
      const subject = { user: signedIn.user, session: signedIn.session, ip: ip ?? '', body: undefined }
      const limits = read.throttle ? app.rateLimiter.countForLane(read.throttle, subject) : []
      if (limits === undefined) return false
      if (!(limits instanceof Promise)) {
        write(req, res, found, limits)
        return true
      }
      limits
        .then((counted) => (counted === undefined ? fastify(req, res) : write(req, res, found, counted)))
        .catch((error: unknown) => failed(error, req, res, fastify))
      return true
    } catch (error) {
      if (!res.headersSent) {
        app.log.error({ err: error, url: req.url }, 'warm-read lane failed')
        return false
      }
      failed(error, req, res, fastify)
      return true
    }
  }
  app.addHook('onReady', async () => {
    ;(app.server as LaneServer)[LANE] = lane
  })
}

export default fp(warmReadsPlugin, {
  name: 'warm-reads',
  dependencies: ['shutdown', 'redis', 'cors', 'session', 'rate-limit', 'access-log'],
})
