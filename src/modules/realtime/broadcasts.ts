import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { CreditHoldRow } from '../../db/schema/index.ts'
import { userChannel } from '../../plugins/realtime.ts'
import { presentHold } from '../credits/holds/holds.presenters.ts'

const groupChannel = (groupId: number) => `private-chat.group.${groupId}`
// Laravel's default broadcast name is the event's class.
const laravelEvent = (name: string) => `App\\Events\\${name}`
export const NOTIFICATION_EVENT = 'Illuminate\\Notifications\\Events\\BroadcastNotificationCreated'

/**
 * The chat events, broadcast as Laravel would: to the group's private channel under the event's
 * class name (JoinRequestResponded to the requester's user channel), leaving out the socket of the
 * request that caused them (`toOthers`, from its X-Socket-Id).
 */
export function broadcastChatEvents(app: FastifyInstance): void {
  const { events, realtime } = app
  const send = (channels: string[], name: string, data: unknown) =>
    realtime.broadcast(channels, laravelEvent(name), data).catch((error: unknown) => {
      app.log.warn({ err: error, event: name }, 'realtime: broadcast failed')
    })
  events.on('SocketMessage', (e) => send([groupChannel(e.groupId)], 'SocketMessage', { message: e.message }))
  events.on('MessageDeleted', (e) =>
    send([groupChannel(e.groupId)], 'MessageDeleted', {
      message_id: e.messageId,
      group_id: e.groupId,
      deleted_by: e.deletedBy,
    }),
  )
  events.on('GroupDeleted', (e) =>
    send([groupChannel(e.groupId)], 'GroupDeleted', { group_id: e.groupId, deleted_by: e.deletedBy }),
  )
  events.on('UserLeftGroup', (e) =>
    send([groupChannel(e.groupId)], 'UserLeftGroup', {
      group_id: e.groupId,
      user_id: e.userId,
      member_count: e.memberCount,
    }),
  )
  // A chat analysis's outcome goes to its group; an agent's call (no group), a try that will be
  // made again and a call whose answer was no longer wanted are nobody else's business.
  events.on('AiCallCompleted', (e) => {
    if (e.groupId === null) return
    void send([groupChannel(e.groupId)], 'AiCallCompleted', {
      ai_call_id: e.aiCallId,
      group_id: e.groupId,
      message_id: e.messageId,
    })
  })
  events.on('AiCallFailed', (e) => {
    if (e.groupId === null || e.willRetry || e.status === 'aborted') return
    void send([groupChannel(e.groupId)], 'AiCallFailed', {
      ai_call_id: e.aiCallId,
      group_id: e.groupId,
      reason: e.reason,
    })
  })
  events.on('JoinRequestResponded', (e) =>
    send([userChannel(e.userId)], 'JoinRequestResponded', {
      join_request_id: e.joinRequestId,
      group_id: e.groupId,
      user_id: e.userId,
      status: e.status,
    }),
  )
}

/**
 * The "order-status-updated" notification for a changed credit hold, on the user's channel, as
 * Laravel's broadcast notification (so Echo's `.notification()` gets it): to every tab of the user.
 */
function notifyOrderStatus(app: FastifyInstance, userId: number, hold: CreditHoldRow): void {
  const data = {
    id: randomUUID(),
    type: 'order-status-updated',
    broker_parent_order_id: hold.brokerParentOrderId,
    status: hold.status,
    hold: presentHold(hold),
  }
  app.realtime.publish([userChannel(userId)], NOTIFICATION_EVENT, data).catch((error: unknown) => {
    app.log.warn({ err: error }, 'realtime: order status notification failed')
  })
}

/** Sends the "order-status-updated" notification for every committed hold change. */
export function notifyHoldChanges(app: FastifyInstance): void {
  app.events.on('CreditHoldChanged', (e) => notifyOrderStatus(app, e.userId, e.hold))
}
