import type { Redis } from 'ioredis'

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

/** Carries deliveries to every instance's sockets: in process, or over Redis pub/sub. */
export interface RealtimeBus {
  publish(delivery: Delivery): Promise<void>
  /** Called for every delivery, this instance's own included (once). */
  onDelivery(handler: (delivery: Delivery) => void): void
  close(): Promise<void>
}

/** One process: a publish is a delivery. */
export function createMemoryBus(): RealtimeBus {
  let handler: (delivery: Delivery) => void = () => {}
  return {
    async publish(delivery) {
      handler(delivery)
    },
    onDelivery(next) {
      handler = next
    },
    close: async () => {},
  }
}

/**
 * Many instances: every delivery goes through one Redis channel (under the key prefix) and comes
 * back to every instance, this one included, over one subscriber connection.
 */
export async function createRedisBus(redis: Redis, onError: (error: unknown) => void): Promise<RealtimeBus> {
  const channel = `${redis.options.keyPrefix ?? ''}realtime:deliveries`
  const subscriber = redis.duplicate()
  subscriber.on('error', onError)
  let handler: (delivery: Delivery) => void = () => {}
  subscriber.on('message', (on: string, message: string) => {
    if (on !== channel) return
    try {
      handler(JSON.parse(message) as Delivery)
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
    close: async () => void (await subscriber.quit().catch(() => subscriber.disconnect())),
  }
}
