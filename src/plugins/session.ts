import { parseCookie, stringifySetCookie } from 'cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { LRUCache } from 'lru-cache'
import type { Config } from '../config.ts'
import type { SessionPayload, SessionRow, UserRow } from '../db/schema/index.ts'
import { createEventBus } from '../lib/events.ts'
import { createPeriodicTask } from '../lib/periodic.ts'
import { redisAvailability } from '../lib/redis/health.ts'
import { type CachedSession, createSessionCache } from '../lib/session-cache.ts'
import { createSessionFanOut } from '../lib/session-fan-out.ts'
import type { Cookies, ForeignCookies, SessionAdoption } from '../lib/sessions/foreign-cookies.ts'
import { createRememberTokenStore, type RememberTokenStore } from '../lib/sessions/remember-token-store.ts'
import {
  type ActiveSession,
  createSessionStore,
  hashSessionToken,
  type SessionRef,
  type SessionStore,
  sessionRefOf,
} from '../lib/sessions/session-store.ts'
import { sealXsrfToken } from '../lib/xsrf.ts'

/** The request's session, named for an event that must spare it (null: it has none). */
export const sessionRefOfRequest = (request: FastifyRequest): SessionRef | null =>
  request.session ? sessionRefOf(request.session) : null

export const SESSION_COOKIE = 'app_session'
export const XSRF_COOKIE = 'XSRF-TOKEN'
/** "Remember me": HttpOnly, long-lived; it starts a new session once the old one has ended. */
export const REMEMBER_COOKIE = 'app_remember'
// Longer than any token this service issues: such a cookie names no session, unhashed and unlooked-up.
const MAX_TOKEN_LENGTH = 100
const PUBLIC_CACHING = /(^|,)\s*public\s*(,|=|$)/i
/** How often expired sessions are deleted, in the background (and once when the app is ready). */
export const SESSION_SWEEP_EVERY_MS = 10 * 60_000

/**
 * Signed-in sessions that ended: the one `sessionId` names (logout, or a new sign-in on that
 * browser), else every one of the user's but `exceptSessionId` (password change or reset, "log out
 * other browser sessions"); `lockedOut` when the user may use nothing any more (blocked, deleted).
 * Ids are the rows' (a SHA-256 of the cookie), never the cookie.
 */
export interface SessionsEnded {
  userId: number
  sessionId?: string
  exceptSessionId?: string
  lockedOut?: boolean
}

/** What handlers do with the current request's session; the cookies follow in the response. */
export interface SessionControl {
  /** The request's session, opening a guest one when it has none (CSRF cookie route). */
  ensure(request: FastifyRequest): Promise<ActiveSession>
  /**
   * Signs the user in on a brand-new session id and CSRF token (fixation defence); the old one ends,
   * and the device's old "remember me" with it. `remember` remembers the device (REMEMBER_LIFETIME).
   */
  signIn(request: FastifyRequest, user: UserRow, options?: { remember?: boolean }): Promise<void>
  /**
   * Ends the session and forgets the device, and opens a fresh guest session, so the app can sign
   * in again without a new CSRF call.
   */
  signOut(request: FastifyRequest): Promise<void>
  /**
   * Replaces the session with a fresh guest one (new id and CSRF token) carrying `payload`, e.g. a
   * login waiting for its second factor; whoever was signed in on the old one is signed out.
   */
  restartAsGuest(request: FastifyRequest, payload: Omit<SessionPayload, 'csrfToken'>): Promise<void>
  /**
   * Ends every session of a user and forgets every remembered device (password change or reset,
   * block), but the request's own session and device when given.
   */
  endSessionsOf(userId: number, except?: FastifyRequest): Promise<void>
  /**
   * As `endSessionsOf`, for a user who may use nothing any more (blocked, or the account deleted):
   * what they hold open elsewhere (real-time sockets) is closed too.
   */
  lockOut(userId: number): Promise<void>
  /**
   * Calls `listener` after signed-in sessions end, whatever ended them (what they authorized ends
   * with them: real-time channels); answers a function that stops it.
   */
  onSessionsEnded(listener: (ended: SessionsEnded) => void): () => void
  /** Stores `changes` in the request's session payload (a password confirmation), for its next requests. */
  updatePayload(request: FastifyRequest, changes: Omit<Partial<SessionPayload>, 'csrfToken'>): Promise<void>
  /**
   * The signed-in session a Cookie header names, when this process holds it and it needs no I/O
   * now (the warm-read lane, plugins/warm-reads.ts); undefined for anything else, which the request
   * hook resolves as usual.
   */
  signedInFromMemory(cookieHeader: string | undefined): { session: ActiveSession; user: UserRow } | undefined
  /** The two Set-Cookie lines every answer to a live session carries (sliding expiry). */
  responseCookies(session: ActiveSession): readonly string[]
}

declare module 'fastify' {
  interface FastifyRequest {
    session: ActiveSession | null
    user: UserRow | null
    /** The Set-Cookie line for the remember cookie this answer carries (issued or cleared), if any. */
    rememberCookie: string | null
    /** The session cookie was looked up and names no live session: the answer clears it. */
    sessionCookieStale: boolean
  }
  interface FastifyInstance {
    sessionControl: SessionControl
    /** The session and remembered-device tables, for what lists them (the profile's browser sessions). */
    sessionStore: { sessions: SessionStore; rememberTokens: RememberTokenStore }
  }
}

async function sessionPlugin(
  app: FastifyInstance,
  {
    config,
    foreignCookies,
  }: {
    config: Config
    /** The replaced system's cookies, read for a request none of this service's own let in (cutover). */
    foreignCookies?: ForeignCookies | undefined
  },
) {
  const sessions = createSessionStore({
    db: app.db,
    clock: app.clock,
    lifetimeMinutes: config.session.lifetimeMinutes,
    absoluteLifetimeMinutes: config.session.absoluteLifetimeMinutes,
  })
  const remember = createRememberTokenStore({
    db: app.db,
    clock: app.clock,
    lifetimeMinutes: config.session.rememberLifetimeMinutes,
  })
  const cache = createSessionCache<SessionRow, UserRow>((entry) => entry.session.userId)
  type CachedEntry = CachedSession<SessionRow, UserRow>
  const fanOut = createSessionFanOut(
    app.redis,
    cache,
    redisAvailability(app.dependencyHealth, app.log, 'sessions'),
  )
  await fanOut.subscribed
  const forgetSession = (session: ActiveSession) => {
    cache.forgetSession(session.row.id)
    return fanOut.publish({ sessions: [session.row.id] })
  }
  const forgetUser = (userId: number) => {
    cache.forgetUser(userId)
    return fanOut.publish({ users: [userId] })
  }
  const stopListening = app.events.on('UserChanged', (e) => void forgetUser(e.userId))
  // Expired sessions (idle past the lifetime, or older than the absolute one) are deleted by a timer,
  // never by the request that happens to run it (Laravel's lottery made one request in fifty pay for
  // the whole table). Every instance sweeps; the delete is the same whoever runs it. Requests do not
  // wait for it: each checks its own session's expiry (keepAlive), cached or not.
  const sweeper = createPeriodicTask(() => Promise.all([sessions.sweepExpired(), remember.sweepExpired()]), {
    everyMs: SESSION_SWEEP_EVERY_MS,
    onError: (error) => app.log.warn({ err: error }, 'sessions: the sweep of expired sessions failed'),
  })
  app.addHook('onReady', async () => sweeper.start())
  app.addHook('onClose', async () => {
    await sweeper.stop()
    stopListening()
    await fanOut.close()
  })

  const maxAge = config.session.lifetimeMinutes * 60
  const absoluteLifetime = config.session.absoluteLifetimeMinutes * 60
  const cookieBase = {
    path: '/',
    sameSite: 'lax',
    secure: config.session.secureCookie,
    domain: config.session.domain,
  } as const
  // The cookies this service reads, and what it writes, with the `cookie` package (what
  // @fastify/cookie wraps; that plugin parsed every cookie into a new object and kept a Map per reply).
  const tokenIn = (cookieHeader: string | undefined): string | undefined =>
    cookieHeader ? parseCookie(cookieHeader)[SESSION_COOKIE] : undefined
  const presentedRememberToken = (request: FastifyRequest): string | undefined =>
    request.headers.cookie ? parseCookie(request.headers.cookie)[REMEMBER_COOKIE] : undefined
  const expiredCookie = (name: string) =>
    stringifySetCookie({ name, value: '', ...cookieBase, maxAge: 0, expires: new Date(0) })
  const expiredSessionCookie = expiredCookie(SESSION_COOKIE)
  const expiredRememberCookie = expiredCookie(REMEMBER_COOKIE)
  const rememberMaxAge = config.session.rememberLifetimeMinutes * 60
  const rememberCookie = (token: string) =>
    stringifySetCookie({
      name: REMEMBER_COOKIE,
      value: token,
      ...cookieBase,
      httpOnly: true,
      maxAge: rememberMaxAge,
      expires: new Date(app.clock.nowMs() + rememberMaxAge * 1000),
    })

  const clientInfo = (request: FastifyRequest) => ({
    ipAddress: request.ip ?? null,
    userAgent: request.headers['user-agent'] ?? null,
  })

  const ends = createEventBus<{ ended: SessionsEnded }>((err) =>
    app.log.error({ err }, 'a listener of ended sessions failed'),
  )
  const end = async (session: ActiveSession | null) => {
    if (!session) return
    await sessions.destroy(session)
    await forgetSession(session)
    const userId = session.row.userId
    if (userId !== null) ends.emit('ended', { userId, sessionId: session.row.id })
  }
  const endAllOf = async (userId: number, kept?: SessionRef) => {
    await sessions.destroyForUser(userId, kept)
    await remember.forgetAllOf(userId, kept?.rememberTokenId)
    if (foreignCookies) await foreignCookies.forgetUser(userId)
    await forgetUser(userId)
  }
  const endSessionsBut = async (userId: number, kept?: SessionRef) => {
    await endAllOf(userId, kept)
    ends.emit('ended', { userId, ...(kept ? { exceptSessionId: kept.id } : {}) })
  }

  /**
   * Ends the request's session and forgets its device: the one its session was remembered by and
   * the one its remember cookie names (cleared in the answer), so the next user of this browser
   * cannot come back as the last one.
   */
  const endAndForgetDevice = async (request: FastifyRequest) => {
    const devices = new Set<string>()
    const ofSession = request.session?.row.rememberTokenId
    if (ofSession) devices.add(ofSession)
    const presented = presentedRememberToken(request)
    if (presented !== undefined) {
      if (presented.length > 0 && presented.length <= MAX_TOKEN_LENGTH) devices.add(sessionIdOf(presented))
      request.rememberCookie = expiredRememberCookie
    }
    if (devices.size > 0) await remember.forget([...devices])
    for (const id of devices) restoring.delete(id)
    await end(request.session)
  }

  /**
   * Starts a session from a remember cookie, when the device is still remembered. Requests that
   * arrive together with the same cookie (the app's first burst after a pause) share the one new
   * session for a few seconds; each still resolves it as any session, and one that has ended
   * meanwhile is not handed out: the device is redeemed again.
   */
  const restoring = new LRUCache<string, Promise<string | undefined>>({ max: 10_000, ttl: 10_000 })
  const startFromDevice = (request: FastifyRequest, rememberToken: string, device: string) => {
    const client = clientInfo(request)
    const started = remember.redeem(rememberToken).then(async (found) => {
      if (!found) return undefined
      const session = await sessions.open({ userId: found.user.id, ...client, rememberTokenId: found.row.id })
      return session.token
    })
    restoring.set(device, started)
    started.catch(() => restoring.delete(device))
    return started
  }
  const restore = async (request: FastifyRequest, rememberToken: string) => {
    if (rememberToken.length === 0 || rememberToken.length > MAX_TOKEN_LENGTH) {
      request.rememberCookie = expiredRememberCookie
      return
    }
    const device = sessionIdOf(rememberToken)
    const shared = restoring.get(device)
    let sessionToken = await (shared ?? startFromDevice(request, rememberToken, device))
    if (sessionToken !== undefined) await resolve(request, sessionToken)
    if (shared && sessionToken !== undefined && !request.session) {
      sessionToken = await startFromDevice(request, rememberToken, device)
      if (sessionToken !== undefined) await resolve(request, sessionToken)
    }
    if (!request.user) request.rememberCookie = expiredRememberCookie
  }

  const control: SessionControl = {
    async ensure(request) {
      request.session ??= await sessions.open({ userId: null, ...clientInfo(request) })
      return request.session
    },
    async signIn(request, user, options = {}) {
      await endAndForgetDevice(request)
      let rememberTokenId: string | null = null
      if (options.remember) {
        const device = await remember.issue({ userId: user.id, ...clientInfo(request) })
        rememberTokenId = device.row.id
        request.rememberCookie = rememberCookie(device.token)
      }
      request.session = await sessions.open({ userId: user.id, ...clientInfo(request), rememberTokenId })
      request.user = user
    },
    async signOut(request) {
      const userId = request.session?.row.userId
      if (userId && foreignCookies) await foreignCookies.forgetUser(userId)
      await endAndForgetDevice(request)
      request.session = await sessions.open({ userId: null, ...clientInfo(request) })
      request.user = null
    },
    async restartAsGuest(request, payload) {
      await endAndForgetDevice(request)
      request.session = await sessions.open({ userId: null, ...clientInfo(request), payload })
      request.user = null
    },
    endSessionsOf: (userId, except) =>
      endSessionsBut(userId, except?.session ? sessionRefOf(except.session) : undefined),
    async lockOut(userId) {
      await endAllOf(userId)
      ends.emit('ended', { userId, lockedOut: true })
    },
    onSessionsEnded: (listener) => ends.on('ended', listener),
    async updatePayload(request, changes) {
      if (!request.session) return
      await sessions.updatePayload(request.session, changes)
      await forgetSession(request.session)
    },
    signedInFromMemory(cookieHeader) {
      const token = tokenIn(cookieHeader)
      if (!token || token.length > MAX_TOKEN_LENGTH) return undefined
      const entry = cache.get(sessionIdOf(token))
      const session = entry && sessionFromMemory(token, entry)
      // The lane only reads the session: the cached row, not a copy.
      if (!session || session.row.userId === null || !entry?.user) return undefined
      return { session, user: entry.user }
    },
    responseCookies: (session) => setCookieLines(session, app.clock.nowMs()),
  }

  app.decorate('sessionControl', control)
  app.decorate('sessionStore', { sessions, rememberTokens: remember })
  // The consequences for sessions of changes made elsewhere: a password change ends the user's other
  // sessions; a deleted account, everything it held open.
  const stopEnding = [
    app.events.on('PasswordChanged', (e) => endSessionsBut(e.userId, e.kept ?? undefined)),
    app.events.on('AccountDeleted', (e) => control.lockOut(e.userId)),
  ]
  app.addHook('onClose', async () => {
    for (const stop of stopEnding) stop()
  })
  app.decorateRequest('session', null)
  app.decorateRequest('user', null)
  app.decorateRequest('rememberCookie', null)
  app.decorateRequest('sessionCookieStale', false)

  // The token's hash is the row id; hashing every request's cookie cost more than the rest of the
  // session lookup, so each live token's id is remembered (tokens are in memory per request anyway).
  const tokenIds = new LRUCache<string, string>({ max: 10_000 })
  const sessionIdOf = (token: string) => {
    let id = tokenIds.get(token)
    if (id === undefined) {
      id = hashSessionToken(token)
      tokenIds.set(token, id)
    }
    return id
  }

  /**
   * The session of a cached entry, its row the cached one, when it needs no I/O now (live, no touch
   * due, its user not blocked), else undefined: expired (deleted), a touch due or a blocked user's
   * (ended) go through `lookUp`.
   */
  const sessionFromMemory = (token: string, entry: CachedEntry): ActiveSession | undefined => {
    const session: ActiveSession = { token, row: entry.session }
    if (sessions.standing(session) !== 'live') return undefined
    if (session.row.userId !== null && (!entry.user || entry.user.blockedAt)) return undefined
    return session
  }
  /** Puts a session from memory (and its user) on the request: true when done, false when it needs `lookUp`. */
  const adopt = (request: FastifyRequest, token: string, entry: CachedEntry): boolean => {
    const session = sessionFromMemory(token, entry)
    if (!session) return false
    // The row is copied: a request may change its session (payload, last activity) without touching
    // what others are handed. The user is shared, frozen when cached: nothing changes a user in place.
    request.session = { token, row: { ...session.row } }
    if (entry.user && session.row.userId !== null) request.user = entry.user
    return true
  }

  /** The rest of resolving: the database on a cache miss, the touch or expiry, a blocked user. */
  const lookUp = async (
    request: FastifyRequest,
    token: string,
    id: string,
    cached: CachedEntry | undefined,
  ) => {
    let entry = cached
    if (!entry) {
      const began = cache.begin()
      const found = await sessions.lookup(token)
      if (!found) {
        request.sessionCookieStale = true
        return
      }
      entry = { session: found.session.row, user: found.user && Object.freeze(found.user) }
      cache.store(id, entry, began)
      if (adopt(request, token, entry)) return
    }
    const session: ActiveSession = { token, row: { ...entry.session } }
    if (!(await sessions.keepAlive(session))) {
      request.sessionCookieStale = true
      return void (await forgetSession(session))
    }
    entry.session.lastActivity = session.row.lastActivity
    request.session = session
    if (session.row.userId === null) return
    // A blocked user's sessions end at once, whatever they were doing.
    if (!entry.user || entry.user.blockedAt) {
      await end(session)
      request.session = null
      request.sessionCookieStale = true
      return
    }
    request.user = entry.user
  }

  /** Puts the session a cookie value names on the request, when it is live (its user's too). */
  const resolve = (request: FastifyRequest, token: string): Promise<void> | undefined => {
    const id = sessionIdOf(token)
    const entry = cache.get(id)
    if (entry && adopt(request, token, entry)) return undefined
    return lookUp(request, token, id, entry)
  }

  /** What the foreign cookies' reader may do to this request (ForeignCookies.restore). */
  const adoptionFor = (request: FastifyRequest): SessionAdoption => ({
    async adopt(sessionToken, rememberToken) {
      // A session not found clears no cookie: the request never carried this token.
      const stale = request.sessionCookieStale
      await resolve(request, sessionToken)
      request.sessionCookieStale = stale
      if (!request.session) return false
      if (rememberToken !== undefined) request.rememberCookie = rememberCookie(rememberToken)
      return true
    },
    async startRemembered(user) {
      const client = clientInfo(request)
      const device = await remember.issue({ userId: user.id, ...client })
      const session = await sessions.open({ userId: user.id, ...client, rememberTokenId: device.row.id })
      return { sessionToken: session.token, rememberToken: device.token }
    },
  })
  const restoreForeign = async (request: FastifyRequest, reply: FastifyReply, cookies: Cookies) => {
    const lines = await foreignCookies?.restore(cookies, adoptionFor(request))
    if (lines && lines.length > 0) reply.header('set-cookie', lines)
  }

  // A session in memory and live resolves without a promise; anything else goes through `lookUp`.
  // Without a live session, a remember cookie starts one, else the replaced system's cookies may.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.method === 'OPTIONS' || !request.headers.cookie) return done()
    const cookies = parseCookie(request.headers.cookie)
    const token = cookies[SESSION_COOKIE]
    const rememberToken = cookies[REMEMBER_COOKIE]
    if (token !== undefined && token.length > MAX_TOKEN_LENGTH) {
      request.sessionCookieStale = true
    }
    const resolving = token && !request.sessionCookieStale ? resolve(request, token) : undefined
    const foreign = foreignCookies?.carries(cookies) === true
    if (rememberToken === undefined && !foreign) {
      if (resolving) resolving.then(() => done(), done)
      else done()
      return
    }
    Promise.resolve(resolving)
      .then(() =>
        request.session || rememberToken === undefined ? undefined : restore(request, rememberToken),
      )
      .then(() => (request.session || !foreign ? undefined : restoreForeign(request, reply, cookies)))
      .then(() => done(), done)
  })

  // Sliding expiry, as Laravel: both cookies are sent again on every response of a live session,
  // expiring with the idle lifetime, or at the session's absolute end when that comes first.
  // Serialising them cost about a tenth of a cached read; their bytes change only with the session
  // or the Expires second, so a session's pair is kept for that second (with what it was made from).
  interface CookieLines {
    expiresSecond: number
    maxAge: number
    token: string
    csrfToken: string
    lines: string[]
  }
  const cookieLines = new LRUCache<string, CookieLines>({ max: 10_000 })
  const setCookieLines = (session: ActiveSession, nowMs: number) => {
    const nowSecond = Math.floor(nowMs / 1000)
    const expiresSecond = Math.min(nowSecond + maxAge, session.row.createdAt + absoluteLifetime)
    const cookieMaxAge = Math.max(0, expiresSecond - nowSecond)
    const csrfToken = session.row.payload.csrfToken
    const kept = cookieLines.get(session.row.id)
    if (
      kept?.expiresSecond === expiresSecond &&
      kept.maxAge === cookieMaxAge &&
      kept.token === session.token &&
      kept.csrfToken === csrfToken
    )
      return kept.lines
    const expires = new Date(expiresSecond * 1000)
    const options = { ...cookieBase, maxAge: cookieMaxAge, expires }
    const lines = [
      stringifySetCookie({ name: SESSION_COOKIE, value: session.token, ...options, httpOnly: true }),
      stringifySetCookie({
        name: XSRF_COOKIE,
        value: sealXsrfToken(csrfToken, config.appKey),
        ...options,
        httpOnly: false,
      }),
    ]
    cookieLines.set(session.row.id, {
      expiresSecond,
      maxAge: cookieMaxAge,
      token: session.token,
      csrfToken,
      lines,
    })
    return lines
  }
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload, done) => {
    // A shared cache may hand a `public` answer to anyone: it carries no one's cookie, nor clears one.
    const caching = reply.getHeader('cache-control')
    if (caching !== undefined && PUBLIC_CACHING.test(String(caching))) {
      reply.removeHeader('set-cookie')
      return done(null, payload)
    }
    if (request.session) {
      // Appended to whatever Set-Cookie lines the route wrote (fastify copies the array).
      reply.header('set-cookie', setCookieLines(request.session, app.clock.nowMs()))
    } else if (request.sessionCookieStale) {
      // A cookie the lookup found naming no live session is cleared (appended, as above); one never
      // looked up (a request refused before, OPTIONS) is left as it is.
      reply.header('set-cookie', expiredSessionCookie)
    }
    if (request.rememberCookie) reply.header('set-cookie', request.rememberCookie)
    done(null, payload)
  })
}

export default fp(sessionPlugin, {
  name: 'session',
  dependencies: ['db', 'clock', 'events', 'redis', 'dependency-health'],
})
