import type { EventBus } from '../../lib/events.ts'
import type { AppEvents, ServiceEvents } from '../../plugins/events.ts'
import type { Message } from './chat.schemas.ts'

/** What a chat change announces once its transaction has committed. */
export type ChatEvent = { [K in keyof AppEvents]: { name: K; payload: AppEvents[K] } }[keyof AppEvents]

/** SocketMessage for a message as the API presents it. */
export const messagePosted = (message: Message): ChatEvent => ({
  name: 'SocketMessage',
  payload: { messageId: message.id, senderId: message.user?.id ?? null, groupId: message.group_id, message },
})

/** Emits the events of a committed change, in order. */
export function emitAll(events: EventBus<ServiceEvents>, list: readonly ChatEvent[]): void {
  for (const event of list) events.emit(event.name, event.payload as never)
}
