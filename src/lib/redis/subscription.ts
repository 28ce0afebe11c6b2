import type { Redis } from 'ioredis'

export interface ChannelSubscription {
  /** Settles once subscribed, or once the connection failed (it subscribes when Redis is back). */
  readonly subscribed: Promise<void>
  close(): Promise<void>
}

/**
 * One pub/sub channel on a connection of its own (a subscribed connection can do nothing else),
 * made from the client's settings. Commands are refused until connected, so it subscribes on each
 * `ready`: the first connection and every reconnect. Its errors go to `onError` (never to stderr).
 */
export function subscribeToChannel(
  redis: Redis,
  channel: string,
  onMessage: (message: string) => void,
  onError: (error: unknown) => void,
): ChannelSubscription {
  const connection = redis.duplicate({ autoResubscribe: false })
  let markSubscribed: () => void = () => {}
  const subscribed = new Promise<void>((resolve) => {
    markSubscribed = resolve
  })
  const failed = (error: unknown) => {
    onError(error)
    markSubscribed()
  }
  connection.on('error', failed)
  connection.on('ready', () => {
    connection.subscribe(channel).then(() => markSubscribed(), failed)
  })
  connection.on('message', (on: string, message: string) => {
    if (on === channel) onMessage(message)
  })
  return {
    subscribed,
    close: async () => void (await connection.quit().catch(() => connection.disconnect())),
  }
}
