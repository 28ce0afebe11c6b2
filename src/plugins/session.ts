import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import type { SessionPayload, UserRow } from '../db/schema/index.ts'
import { type ActiveSession, createSessionsService } from '../modules/sessions/sessions.service.ts'
import { createUsersService } from '../modules/users/users.service.ts'

export const SESSION_COOKIE = 'app_session'
export const XSRF_COOKIE = 'XSRF-TOKEN'

/** What handlers do with the current request's session; the cookies follow in the response. */
export interface SessionControl {
  /** The request's session, opening a guest one when it has none (CSRF cookie route). */
  ensure(request: FastifyRequest): Promise<ActiveSession>
  /** Signs the user in on a brand-new session id and CSRF token (fixation defence); the old one ends. */
  signIn(request: FastifyRequest, user: UserRow): Promise<void>
  /** Ends the session and opens a fresh guest one, so the app can sign in again without a new CSRF call. */
  signOut(request: FastifyRequest): Promise<void>
  /**
   * Replaces the session with a fresh guest one (new id and CSRF token) carrying `payload`, e.g. a
   * login waiting for its second factor; whoever was signed in on the old one is signed out.
   */
  restartAsGuest(request: FastifyRequest, payload: Omit<SessionPayload, 'csrfToken'>): Promise<void>
  /** Ends every session of a user (password reset, block, deletion), but the request's own when given. */
  endSessionsOf(userId: number, except?: FastifyRequest): Promise<void>
}

declare module 'fastify' {
  interface FastifyRequest {
    session: ActiveSession | null
    user: UserRow | null
  }
  interface FastifyInstance {
    sessionControl: SessionControl
  }
}

async function sessionPlugin(app: FastifyInstance, { config }: { config: Config }) {
  const sessions = createSessionsService({
    db: app.db,
    clock: app.clock,
    lifetimeMinutes: config.session.lifetimeMinutes,
  })
  const users = createUsersService({ db: app.db, clock: app.clock })
  const maxAge = config.session.lifetimeMinutes * 60
  const cookieBase = { path: '/', sameSite: 'lax', secure: config.session.secureCookie } as const

  const clientInfo = (request: FastifyRequest) => ({
    ipAddress: request.ip ?? null,
    userAgent: request.headers['user-agent'] ?? null,
  })

  const control: SessionControl = {
    async ensure(request) {
      request.session ??= await sessions.open({ userId: null, ...clientInfo(request) })
      return request.session
    },
    async signIn(request, user) {
      if (request.session) await sessions.destroy(request.session)
      request.session = await sessions.open({ userId: user.id, ...clientInfo(request) })
      request.user = user
    },
    async signOut(request) {
      if (request.session) await sessions.destroy(request.session)
      request.session = await sessions.open({ userId: null, ...clientInfo(request) })
      request.user = null
    },
    async restartAsGuest(request, payload) {
      if (request.session) await sessions.destroy(request.session)
      request.session = await sessions.open({ userId: null, ...clientInfo(request), payload })
      request.user = null
    },
    async endSessionsOf(userId, except) {
      await sessions.destroyForUser(userId, except?.session ?? undefined)
    },
  }

  app.decorate('sessionControl', control)
  app.decorateRequest('session', null)
  app.decorateRequest('user', null)

  app.addHook('onRequest', async (request) => {
    if (request.method === 'OPTIONS') return
    const token = request.cookies[SESSION_COOKIE]
    if (!token) return
    const session = await sessions.resolve(token)
    if (!session) return
    request.session = session
    if (session.row.userId === null) return
    const user = await users.findById(session.row.userId)
    // A blocked user's sessions end at once, whatever they were doing.
    if (!user || user.blockedAt) {
      await sessions.destroy(session)
      request.session = null
      return
    }
    request.user = user
  })

  // Sliding expiry, as Laravel: both cookies are sent again on every response of a live session.
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply) => {
    const expires = new Date(app.clock.now().getTime() + maxAge * 1000)
    if (request.session) {
      reply.setCookie(SESSION_COOKIE, request.session.token, {
        ...cookieBase,
        httpOnly: true,
        maxAge,
        expires,
      })
      reply.setCookie(XSRF_COOKIE, request.session.row.payload.csrfToken, {
        ...cookieBase,
        httpOnly: false,
        maxAge,
        expires,
      })
    } else if (request.cookies[SESSION_COOKIE]) {
      reply.clearCookie(SESSION_COOKIE, cookieBase)
    }
  })
}

export default fp(sessionPlugin, { name: 'session', dependencies: ['db', 'clock'] })
