import { createHash, randomBytes } from 'node:crypto'
import type { Db } from '../../db/client.ts'
import type { SessionPayload, SessionRow, UserRow } from '../../db/schema/index.ts'
import { type Clock, unixSeconds } from '../clock.ts'
import { createSessionsRepository } from './sessions.repository.ts'

/** A session as the request holds it: `token` is the cookie value, `row.id` its SHA-256. */
export interface ActiveSession {
  token: string
  row: SessionRow
}

/** A session named without its secret: which one, and the remembered device it came from. */
export interface SessionRef {
  id: string
  rememberTokenId: string | null
}

/** The reference of a session, for an event that must spare it. */
export const sessionRefOf = (session: ActiveSession): SessionRef => ({
  id: session.row.id,
  rememberTokenId: session.row.rememberTokenId,
})

// Ids per query when asking which sessions are live: well under any bound on a statement's parameters.
const LIVE_CHECK_BATCH = 1000

// Writing last_activity on every request would make every read a write; a minute's precision is plenty.
const TOUCH_AFTER_SECONDS = 60

/** A new secret cookie value: 30 random bytes, base64url. */
export const randomSessionToken = () => randomBytes(30).toString('base64url')
export const hashSessionToken = (token: string) => createHash('sha256').update(token).digest('hex')

export function createSessionStore({
  db,
  clock,
  lifetimeMinutes,
  absoluteLifetimeMinutes,
}: {
  db: Db
  clock: Clock
  /** Idle lifetime: a session unused this long ends (SESSION_LIFETIME). */
  lifetimeMinutes: number
  /** Absolute lifetime: a session this old ends however active it is (SESSION_ABSOLUTE_LIFETIME). */
  absoluteLifetimeMinutes: number
}) {
  const repo = createSessionsRepository({ db })
  const lifetimeSeconds = lifetimeMinutes * 60
  const absoluteLifetimeSeconds = absoluteLifetimeMinutes * 60
  /** The oldest last activity and the oldest start a live session may have now. */
  const liveSince = () => {
    const now = unixSeconds(clock)
    return { lastActivity: now - lifetimeSeconds, createdAt: now - absoluteLifetimeSeconds }
  }

  /**
   * What a request on this session needs, without I/O: `live` (nothing), `touch` (live, but its last
   * activity is due to be written: `keepAlive`), or `expired` (idle past the lifetime, or begun
   * longer ago than the absolute lifetime: `keepAlive` deletes it).
   */
  const standing = (session: ActiveSession): 'live' | 'touch' | 'expired' => {
    const { row } = session
    const now = unixSeconds(clock)
    const live = liveSince()
    if (row.lastActivity < live.lastActivity || row.createdAt < live.createdAt) return 'expired'
    return now - row.lastActivity >= TOUCH_AFTER_SECONDS ? 'touch' : 'live'
  }

  return {
    /** Starts a new session with a fresh id and CSRF token. */
    async open(input: {
      userId: number | null
      ipAddress: string | null
      userAgent: string | null
      payload?: Omit<SessionPayload, 'csrfToken'>
      /** The remembered device the session belongs to. */
      rememberTokenId?: string | null
    }): Promise<ActiveSession> {
      const token = randomSessionToken()
      const now = unixSeconds(clock)
      const row: SessionRow = {
        id: hashSessionToken(token),
        userId: input.userId,
        ipAddress: input.ipAddress?.slice(0, 45) ?? null,
        userAgent: input.userAgent?.slice(0, 500) ?? null,
        payload: { ...input.payload, csrfToken: randomSessionToken() },
        lastActivity: now,
        createdAt: now,
        rememberTokenId: input.rememberTokenId ?? null,
      }
      await repo.insert(row)
      return { token, row }
    },

    /**
     * The session for a cookie value and its user (undefined for a guest session or a user gone), in
     * one query; undefined when unknown. Expiry (idle and absolute) is `keepAlive`'s job.
     */
    async lookup(token: string): Promise<{ session: ActiveSession; user: UserRow | undefined } | undefined> {
      if (token.length === 0 || token.length > 100) return undefined
      const found = await repo.findWithUser(hashSessionToken(token))
      return found && { session: { token, row: found.session }, user: found.user ?? undefined }
    },

    standing,

    /**
     * Expiry and the once-a-minute touch, on every request (also for a session held in memory): false,
     * and the row deleted, when the session was idle past the lifetime or began longer ago than the
     * absolute lifetime.
     */
    async keepAlive(session: ActiveSession): Promise<boolean> {
      const state = standing(session)
      if (state === 'expired') {
        await repo.delete(session.row.id)
        return false
      }
      if (state === 'touch') {
        const now = unixSeconds(clock)
        await repo.touch(session.row.id, now)
        session.row.lastActivity = now
      }
      return true
    },

    /**
     * Which of these session ids name a live session now (neither ended nor expired, idle or too
     * old), asked a thousand at a time.
     */
    async liveAmong(ids: string[]): Promise<Set<string>> {
      const live = new Set<string>()
      for (let i = 0; i < ids.length; i += LIVE_CHECK_BATCH)
        for (const id of await repo.findLiveIds(ids.slice(i, i + LIVE_CHECK_BATCH), liveSince())) live.add(id)
      return live
    },

    /** The user's live sessions (expired ones left out), the most recently active first. */
    listForUser: (userId: number) => repo.findForUser(userId, liveSince()),

    /** Adds `changes` to the session's payload, stored and on `session` (its other keys are kept). */
    async updatePayload(session: ActiveSession, changes: Omit<Partial<SessionPayload>, 'csrfToken'>) {
      await repo.mergePayload(session.row.id, changes)
      session.row.payload = { ...session.row.payload, ...changes }
    },

    destroy: (session: ActiveSession) => repo.delete(session.row.id),

    /** Deletes every expired session, idle or too old (the session plugin's background sweep). */
    sweepExpired: () => repo.deleteExpired(liveSince()),

    /** Ends every session of a user (after a password reset, a block, a deletion), but `except`. */
    destroyForUser: (userId: number, except?: SessionRef) => repo.deleteForUser(userId, except?.id),
  }
}

export type SessionStore = ReturnType<typeof createSessionStore>
