import type { Redis } from 'ioredis'
import { subscribeToChannel } from '../redis/subscription.ts'
import type { AccessEnded, Grant } from './socket-access.ts'

/** One event for the sockets subscribed to some channels, on every instance. */
export interface Delivery {
  channels: string[]
  event: string
  /** The frame's `data`, already a string (Pusher frames carry JSON-encoded strings). */
  data: string
  /** A socket that must not receive it (the sender of a client event; `toOthers`). */
  except?: string
  /** `except` is left out only if it belongs to this user (a request's `X-Socket-Id` names any socket). */
  exceptOwner?: string
  /** The sender of a client event on a presence channel (the frame's `user_id`). */
  userId?: string
}

/** A word for every instance's hub rather than for sockets: a channel authorized, or access ended. */
export type HubNotice = { grant: Grant } | { accessEnded: AccessEnded }

/**
 * Carries deliveries to every instance's sockets, and notices to every instance's hub, in the order
 * they were sent: in process, or over Redis pub/sub.
 */
export interface RealtimeBus {
  publish(delivery: Delivery): Promise<void>
  /** Called for every delivery, this instance's own included (once). */
  onDelivery(handler: (delivery: Delivery) => void): void
  notify(notice: HubNotice): Promise<void>
  /** Called for every notice, this instance's own included (once). */
  onNotice(handler: (notice: HubNotice) => void): void
  close(): Promise<void>
}

/** One process: a publish is a delivery. */
export function createMemoryBus(): RealtimeBus {
  let handler: (delivery: Delivery) => void = () => {}
  let noticeHandler: (notice: HubNotice) => void = () => {}
  return {
    async publish(delivery) {
      handler(delivery)
    },
    onDelivery(next) {
      handler = next
    },
    async notify(notice) {
      noticeHandler(notice)
    },
    onNotice(next) {
      noticeHandler = next
    },
    close: async () => {},
  }
}

/** What the Redis bus follows of Redis, and whom it tells of what it could not send. */
export interface BusRedisState {
  isUp(): boolean
  failed(error: unknown): void
  /** A delivery or notice that did not reach the other instances (this one's sockets still got it). */
  dropped(kind: 'delivery' | 'notice'): void
}

/**
 * Many instances: every delivery goes through one Redis channel (under the key prefix) and comes
 * back to every instance, this one included, over one subscriber connection. Notices share the
 * channel, wrapped as `{notice}` (a delivery has no such key), so they keep their order with
 * deliveries: a GroupDeleted event reaches the sockets before their subscriptions are dropped.
 * While Redis is down (or a publish fails) a message is handled here alone and counted as dropped:
 * this instance's sockets get it, the others' do not, and no caller waits or fails for it.
 */
export async function createRedisBus(redis: Redis, state: BusRedisState): Promise<RealtimeBus> {
  const channel = `${redis.options.keyPrefix ?? ''}realtime:deliveries`
  let handler: (delivery: Delivery) => void = () => {}
  let noticeHandler: (notice: HubNotice) => void = () => {}
  const subscription = subscribeToChannel(
    redis,
    channel,
    (message) => {
      let parsed: Delivery | { notice: HubNotice }
      try {
        parsed = JSON.parse(message) as Delivery | { notice: HubNotice }
      } catch {
        return // only instances of this service publish here: not one of theirs
      }
      if ('notice' in parsed) noticeHandler(parsed.notice)
      else handler(parsed)
    },
    state.failed,
  )
  await subscription.subscribed
  /** Publishes the message, or hands it to this instance's handler and counts it dropped. */
  const send = async (message: string, kind: 'delivery' | 'notice', handleHere: () => void) => {
    if (state.isUp()) {
      try {
        await redis.publish(channel, message)
        return
      } catch (error) {
        state.failed(error)
      }
    }
    state.dropped(kind)
    handleHere()
  }
  return {
    publish: (delivery) => send(JSON.stringify(delivery), 'delivery', () => handler(delivery)),
    onDelivery(next) {
      handler = next
    },
    notify: (notice) => send(JSON.stringify({ notice }), 'notice', () => noticeHandler(notice)),
    onNotice(next) {
      noticeHandler = next
    },
    close: () => subscription.close(),
  }
}
