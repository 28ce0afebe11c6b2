import type { FastifyInstance } from 'fastify'
import type { AccessEnded } from '../../lib/realtime/socket-access.ts'

const groupChannels = (groupId: number) => [`private-chat.group.${groupId}`, `presence-chat.group.${groupId}`]

/**
 * Channel access is checked once, at the auth route; this ends it on every instance when the
 * reason for it ends: a member leaves (or is removed from) a group, a group is deleted, a session
 * that authorized channels ends (logout, password change or reset, "log out other browser
 * sessions"), a user is locked out (blocked, deleted: their sockets close). Registered after the
 * chat broadcasts, so a GroupDeleted or UserLeftGroup event goes out before the subscriptions end.
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
  app.addHook('onClose', async () => stop())
}
