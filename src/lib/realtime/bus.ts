import type { Redis } from 'ioredis'
import type { AccessEnded, Grant } from './socket-access.ts'

/** One event for the sockets subscribed to some channels, on every instance. */
export interface Delivery {
  channels: string[]
  event: string
  /** The frame's `data`, already a string (Pusher frames carry JSON-encoded strings). */
  data: string
  /** A socket that must not receive it (the sender of a client event; `toOthers`). */
  except?: string
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

/**
 * Many instances: every delivery goes through one Redis channel (under the key prefix) and comes
 * back to every instance, this one included, over one subscriber connection. Notices share the
 * channel, wrapped as `{notice}` (a delivery has no such key), so they keep their order with
 * deliveries: a GroupDeleted event reaches the sockets before their subscriptions are dropped.
 */
export async function createRedisBus(redis: Redis, onError: (error: unknown) => void): Promise<RealtimeBus> {
  const channel = `${redis.options.keyPrefix ?? ''}realtime:deliveries`
  const subscriber = redis.duplicate()
  subscriber.on('error', onError)
  let handler: (delivery: Delivery) => void = () => {}
  let noticeHandler: (notice: HubNotice) => void = () => {}
  subscriber.on('message', (on: string, message: string) => {
    if (on !== channel) return
    try {
      const parsed = JSON.parse(message) as Delivery | { notice: HubNotice }
      if ('notice' in parsed) noticeHandler(parsed.notice)
      else handler(parsed)
    } catch (error) {
      onError(error)
    }
  })
  await subscriber.subscribe(channel)
  return {
    async publish(delivery) {
      await redis.publish(channel, JSON.stringify(delivery))
    },
    onDelivery(next) {
      handler = next
    },
    async notify(notice) {
      await redis.publish(channel, JSON.stringify({ notice }))
    },
    onNotice(next) {
      noticeHandler = next
    },
    close: async () => void (await subscriber.quit().catch(() => subscriber.disconnect())),
  }
}
