import type { FastifyInstance } from 'fastify'
import { createPeriodicTask } from '../../lib/periodic.ts'
import type { AccessEnded } from '../../lib/realtime/socket-access.ts'

const groupChannels = (groupId: number) => [`private-chat.group.${groupId}`, `presence-chat.group.${groupId}`]

/**
 * How often each instance checks that the sessions behind its sockets' channels are still live:
 * often enough that a session's expiry ends its channels within a minute.
 */
export const LAPSED_SESSIONS_CHECK_EVERY_MS = 30_000

/**
 * Channel access is checked once, at the auth route; this ends it on every instance when the
 * reason for it ends: a member leaves (or is removed from) a group, a group is deleted, a session
 * that authorized channels ends (logout, password change or reset, "log out other browser
 * sessions"), a user is locked out (blocked, deleted: their sockets close). Registered after the
 * chat broadcasts, so a GroupDeleted or UserLeftGroup event goes out before the subscriptions end.
 * A session that merely expires is found by each instance's periodic check.
 */
export function endChannelAccessWithItsReason(app: FastifyInstance): void {
  const end = (ended: AccessEnded) =>
    app.realtime.hub.endAccess(ended).catch((error: unknown) => {
      app.log.warn({ err: error }, 'realtime: ending channel access failed')
    })
  app.events.on('UserLeftGroup', (e) => end({ channels: groupChannels(e.groupId), userId: String(e.userId) }))
  app.events.on('GroupDeleted', (e) => end({ channels: groupChannels(e.groupId) }))
  const stop = app.sessionControl.onSessionsEnded((e) =>
    end({
      userId: String(e.userId),
      ...(e.sessionId ? { sessionId: e.sessionId } : {}),
      ...(e.exceptSessionId ? { exceptSessionId: e.exceptSessionId } : {}),
      ...(e.lockedOut ? { closeSockets: true } : {}),
    }),
  )
  const check = createPeriodicTask(() => endAccessOfLapsedSessions(app), {
    everyMs: LAPSED_SESSIONS_CHECK_EVERY_MS,
    onError: (error) => app.log.warn({ err: error }, 'realtime: the check of lapsed sessions failed'),
  })
  app.addHook('onReady', async () => check.start())
  app.addHook('preClose', async () => check.stop())
  app.addHook('onClose', async () => stop())
}

/**
 * Ends, on this instance, the channels its sockets were granted by sessions that are no longer
 * live: expired (idle past SESSION_LIFETIME, or older than SESSION_ABSOLUTE_LIFETIME; no request
 * marks that moment) or ended without this instance hearing of it (Redis was down).
 */
export async function endAccessOfLapsedSessions(app: FastifyInstance): Promise<void> {
  const sessions = app.realtime.hub.authorizingSessions()
  if (sessions.length === 0) return
  const live = await app.sessionStore.sessions.liveAmong(sessions)
  const lapsed = sessions.filter((id) => !live.has(id))
  if (lapsed.length > 0) await app.realtime.hub.endAccessHere({ sessionIds: lapsed })
}
