import { AsyncLocalStorage } from 'node:async_hooks'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type WebSocket, WebSocketServer } from 'ws'
import type { Config } from '../config.ts'
import { createAddressSlots } from '../lib/realtime/address-slots.ts'
import { createMemoryBus, createRedisBus } from '../lib/realtime/bus.ts'
import { createClientAddress } from '../lib/realtime/client-address.ts'
import { createHub, type Hub } from '../lib/realtime/hub.ts'
import { registerHubMetrics } from '../lib/realtime/hub-metrics.ts'
import { createOriginPolicy } from '../lib/realtime/origin-policy.ts'
import { createMemoryPresence, createRedisPresence } from '../lib/realtime/presence.ts'
import { errorFrame, PusherError, SOCKET_ID } from '../lib/realtime/protocol.ts'
import { createRedisSocketOwners, localSocketOwners } from '../lib/realtime/socket-owners.ts'
import { RECONNECT_CAP_MS } from '../lib/redis/client.ts'
import { redisAvailability } from '../lib/redis/health.ts'

/** The user channel Echo's `.notification()` and the app's user events use. */
export const USER_CHANNEL = /^private-App\.Models\.User\.(\d{1,15})$/
export const userChannel = (userId: number) => `private-App.Models.User.${userId}`

// Pusher frames are small; anything past 64 KiB closes the socket (ws answers 1009).
const APP_PATH = /^\/app\/([^/?#]{1,128})(?:[?#]|$)/
const MAX_FRAME_BYTES = 64 * 1024
const LAST_SEEN_DAYS = 30
// A refused socket whose client never answers the close frame is cut then, not after ws's 30 s.
const REFUSED_CLOSE_MS = 1000

export interface Realtime {
  /** Publishes to channels on every instance, leaving out the socket of the current request (`toOthers`). */
  broadcast(channels: string[], event: string, data: unknown): Promise<void>
  /** Publishes to channels on every instance, leaving out `except` (a socket id) when given. */
  publish(channels: string[], event: string, data: unknown, except?: string): Promise<void>
  /** Which of these users have a live socket (any instance). */
  online(userIds: number[]): Promise<Set<number>>
  /** When the user's last socket closed, or null (kept for 30 days). */
  lastSeen(userId: number): Promise<Date | null>
  hub: Hub
}

declare module 'fastify' {
  interface FastifyInstance {
    realtime: Realtime
  }
}

/**
 * The Pusher-protocol socket server on this service's own port (`GET /app/{key}` upgrades), the hub behind
 * it, and `app.realtime` to publish through it. With Redis, deliveries reach every instance's
 * sockets and presence is shared, with this instance's records expiring if it dies.
 */
async function realtimePlugin(app: FastifyInstance, { config }: { config: Config }) {
  const options = config.realtime
  const instanceId = randomUUID()
  const redis = app.redis
  const availability = redisAvailability(app.dependencyHealth, app.log, 'realtime')
  const dropped = app.metrics.counter({
    name: 'realtime_messages_dropped_total',
    help: 'Socket messages (kind: delivery, an event or presence change; notice, a grant or an access end) that did not reach the other instances: Redis was down. This instance handled them.',
    labelNames: ['kind'],
  })
  const bus = redis
    ? await createRedisBus(redis, {
        isUp: availability.isUp,
        failed: availability.failed,
        dropped: (kind) => dropped.series({ kind }).inc(),
      })
    : createMemoryBus()
  const presence = redis
    ? createRedisPresence(redis, instanceId, options.instanceTtlSeconds)
    : createMemoryPresence()
  const lastSeenLocal = new Map<string, number>()

  // The periodic work; a quarter of the shortest deadline it serves.
  const every = Math.max(
    250,
    (Math.min(options.activityTimeoutSeconds, options.instanceTtlSeconds) * 1000) / 4,
  )
  const hub = createHub({
    key: options.key,
    secret: options.secret,
    maxConnections: options.maxConnections,
    activityTimeoutSeconds: options.activityTimeoutSeconds,
    drainSeconds: options.drainSeconds,
    limits: {
      maxChannelsPerConnection: options.maxChannelsPerConnection,
      messageRateLimit: options.messageRateLimit,
      maxBufferedBytes: options.maxBufferedBytes,
    },
    bus,
    presence,
    owners: redis ? createRedisSocketOwners(redis, availability.failed) : localSocketOwners,
    log: app.log,
    userOfChannel: (channel) => USER_CHANNEL.exec(channel)?.[1] ?? null,
    onOffline(userId) {
      const now = app.clock.nowMs()
      if (!redis) return void lastSeenLocal.set(userId, now)
      redis
        .set(`realtime:seen:${userId}`, String(now), 'EX', LAST_SEEN_DAYS * 86_400)
        .catch(availability.failed)
    },
    onPresenceError: availability.failed,
    // Another instance writes its records again on its reconnect (at most a reconnect back-off
    // after this one's) or, failing that, at its next heartbeat.
    missingMemberGraceMs: every + RECONNECT_CAP_MS,
  })
  // Redis back (maybe restarted empty): this instance's members are written again at once.
  redis?.on('ready', () => void hub.rewritePresence())
  registerHubMetrics(app.metrics, hub)

  // Echo's interceptor sends the page's socket id; what this request broadcasts leaves that socket
  // out, if it is the requester's own (any id can be sent: another's socket must still get it).
  const requestSocket = new AsyncLocalStorage<{ socketId: string; userId: string }>()
  // Only a signed-in user's such requests enter a context (the session plugin's hook, before this
  // one, has found the user): the others (most) pay nothing, and find no socket to leave out.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.headers['x-socket-id']
    if (typeof header === 'string' && SOCKET_ID.test(header) && request.user)
      requestSocket.run({ socketId: header, userId: String(request.user.id) }, done)
    else done()
  })

  app.decorate('realtime', {
    hub,
    publish: (channels, event, data, except) => hub.publish(channels, event, data, except),
    broadcast(channels, event, data) {
      const origin = requestSocket.getStore()
      return hub.publish(channels, event, data, origin?.socketId, origin?.userId)
    },
    async online(userIds) {
      const found = await hub.online(userIds.map(String))
      return new Set([...found].map(Number))
    },
    async lastSeen(userId) {
      const at = redis
        ? Number(await redis.get(`realtime:seen:${userId}`).catch(availability.failed))
        : lastSeenLocal.get(String(userId))
      return at ? new Date(at) : null
    },
  } satisfies Realtime)

  // Upgrades to /app/{key} are taken straight from the HTTP server, before any route or hook: a
  // socket then holds no request, reply or logger for its whole life (about 5 KiB each). The hub
  // keeps the sockets: ws's own list (clientTracking) would hold a second entry and a listener each.
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_FRAME_BYTES,
    perMessageDeflate: false,
    clientTracking: false,
  })
  const originAllowed = createOriginPolicy(options.allowedOrigins)
  const clientAddress = createClientAddress(config.trustedProxies)
  const addressSlots = createAddressSlots(options.maxConnectionsPerAddress)
  // As Reverb answers: the upgrade completes, then a pusher:error and a close with its code.
  const refuse = (ws: WebSocket, error: { code: number; message: string }) => {
    ws.send(errorFrame(error))
    ws.close(error.code, error.message)
    setTimeout(() => ws.terminate(), REFUSED_CLOSE_MS).unref()
  }
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const key = APP_PATH.exec(request.url ?? '')?.[1]
    if (key === undefined) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    // Read from the request here: no closure a socket keeps may reach it (it would stay in memory).
    const origin = request.headers.origin
    const address = clientAddress(request)
    wss.handleUpgrade(request, socket, head, (ws) => admit(ws, socket, key, origin, address))
  }
  const admit = (ws: WebSocket, socket: Duplex, key: string, origin: string | undefined, address: string) => {
    if (key !== options.key) return refuse(ws, PusherError.appNotFound)
    // 4009 as Reverb's allowed_origins: pusher-js then stops, where a failed handshake is retried.
    if (!originAllowed(origin)) return refuse(ws, PusherError.originNotAllowed)
    const slot = addressSlots.take(address)
    if (!slot) return refuse(ws, PusherError.overQuota)
    hub.accept(ws, socket, slot)
  }
  app.server.on('upgrade', onUpgrade)
  // From the stop signal on, new sockets are refused and the open ones let go in turns (the clients
  // reconnect through the balancer to the other instances). The listener's close waits for them.
  const drain = () =>
    hub.drain().catch((error: unknown) => app.log.warn({ err: error }, 'realtime: drain failed'))
  app.shutdown.draining.addEventListener('abort', () => void drain(), { once: true })
  app.addHook('preClose', async () => {
    app.server.off('upgrade', onUpgrade)
  })

  const timer = setInterval(() => {
    hub.tick().catch((error: unknown) => app.log.warn({ err: error }, 'realtime: tick failed'))
  }, every)
  timer.unref()
  // Silent sockets every second: a full instance's pings come a few at a time, not as one long
  // write every `every` that stalls whatever else is being written.
  const sweeper = setInterval(() => hub.sweepIdle(), Math.min(every, 1000))
  sweeper.unref()
  app.addHook('onClose', async () => {
    // Every member who left is announced before the bus and presence close.
    await drain()
    await new Promise<void>((resolve) => wss.close(() => resolve()))
    clearInterval(timer)
    clearInterval(sweeper)
    await presence.close().catch(availability.failed)
    await bus.close()
  })
}

export default fp(realtimePlugin, {
  name: 'realtime',
  // After the session plugin: its request hook finds the user this one's reads.
  dependencies: ['redis', 'clock', 'metrics', 'shutdown', 'dependency-health', 'session'],
})
