import type { Duplex } from 'node:stream'
import type { RawData, WebSocket } from 'ws'
import type { AddressSlot } from './address-slots.ts'
import type { Delivery, HubNotice, RealtimeBus } from './bus.ts'
import { createClientEventLimits } from './client-event-limits.ts'
import { createFrameWriter } from './frame-writer.ts'
import { createLocalMembers } from './local-members.ts'
import type { PresenceStore } from './presence.ts'
import {
  type ChannelKind,
  encodeFrame,
  errorFrame,
  NOT_READING,
  newSocketId,
  PusherError,
  RECONNECT_LATER,
  TOO_MANY_GRANTS,
} from './protocol.ts'
import { SmallMap } from './small-map.ts'
import {
  type AccessEnded,
  endAccessOn,
  type Grant,
  SocketAccess,
  subscriptionEndedFrame,
} from './socket-access.ts'
import type { SocketOwners } from './socket-owners.ts'
import { checkSubscription } from './subscription-request.ts'

/** The synthetic presence channel of users with a live socket on their own user channel. */
export const ONLINE = '#online'

const MAX_CLIENT_EVENT_BYTES = 10 * 1024
// Every frame is a text frame, a Buffer's too (one encoded once for a fan-out).
const TEXT = { binary: false } as const
const PING = encodeFrame('pusher:ping')

/** What one socket may make this instance do and hold. */
export interface SocketLimits {
  maxChannelsPerConnection: number
  /** Frames a socket may send per window (Reverb's rate_limiting, always on here). */
  messageRateLimit: { maxAttempts: number; decaySeconds: number }
  /** Bytes queued unread for a socket before it is closed. */
  maxBufferedBytes: number
}

export interface HubOptions {
  key: string
  secret: string
  maxConnections: number
  activityTimeoutSeconds: number
  drainSeconds: number
  limits: SocketLimits
  bus: RealtimeBus
  presence: PresenceStore
  /** Whose each socket is, for the other instances' auth routes (and this one's, for theirs). */
  owners: SocketOwners
  /** The user a private user channel belongs to (`private-App.Models.User.7` -> "7"), else null. */
  userOfChannel(channel: string): string | null
  /** When a user's last socket (on any instance) left their user channel. */
  onOffline(userId: string): void
  /** A presence store command failed (Redis): the hub went on with what this instance knows. */
  onPresenceError(error: unknown): void
  /**
   * How long a member must be missing from the store before the reconciliation tells this
   * instance's sockets they left: longer than another instance takes to write its records again
   * after Redis lost them (a restart), so that no one still connected is announced gone.
   */
  missingMemberGraceMs: number
  log: { warn(details: object, message: string): void }
}

interface Subscription {
  readonly kind: ChannelKind
  /** Presence: the member this socket is. */
  readonly userId?: string
}

// Public and private subscriptions say nothing of their socket: one record each serves them all.
const PUBLIC: Subscription = Object.freeze({ kind: 'public' })
const PRIVATE: Subscription = Object.freeze({ kind: 'private' })

/**
 * One socket as the hub holds it. What every socket holds is paid 10,000 times on a full instance,
 * so it is kept to fields: no closures (the socket's listeners are the hub's, shared), no promise,
 * small containers (docs/realtime.md, "Memory per socket").
 */
interface Connection {
  id: string
  ws: WebSocket
  /** The connection under `ws`: corked to write two frames at once. */
  socket: Duplex
  channels: SmallMap<string, Subscription>
  lastActivity: number
  pinged: boolean
  /** The socket's frame-rate window (Reverb's rate_limiting): when it opened, and frames in it. */
  windowStart: number
  frames: number
  /** Whose it is, who authorized its channels, and which ones ended (made at the first grant or end). */
  access: SocketAccess | undefined
  /** Its address's slot, given back at its close. */
  slot: AddressSlot | undefined
}

/** The sockets of one channel on this instance, and the channel's name for their records to share. */
interface Occupants {
  channel: string
  sockets: Set<Connection>
}

/**
 * The Pusher-protocol side of every socket of this instance: subscriptions (with their signatures
 * checked), presence, client events, deliveries from the bus, idle sockets, and the drain at stop.
 */
export function createHub(options: HubOptions) {
  const { bus, presence, owners, log, limits } = options
  // A socket may remember twice the channels it may hold: room to leave and join others, bounded.
  const maxGrants = 2 * limits.maxChannelsPerConnection
  const sockets = new Map<string, Connection>()
  const connectionOf = new WeakMap<WebSocket, Connection>()
  const subscribers = new Map<string, Occupants>()
  // The members this instance's subscribers were told of, per presence channel.
  const announced = new Map<string, Set<string>>()
  let draining = false
  let drained: Promise<void> | undefined
  // Sockets accepted whose close is not yet handled (presence left, member_removed announced),
  // and who waits for there to be none (the drain).
  let unhandled = 0
  let allHandled: (() => void) | undefined

  const frameWindowMs = limits.messageRateLimit.decaySeconds * 1000
  const clientEventLimits = createClientEventLimits()

  const send = (conn: Connection, frame: string | Buffer) => {
    if (conn.ws.readyState !== conn.ws.OPEN) return
    conn.ws.send(frame, TEXT)
    // A client that stops reading would have every frame queued for it: past the bound it is closed
    // (its close frame waits behind the backlog; ws cuts it 30 s later), and nothing more is queued.
    if (conn.ws.bufferedAmount > limits.maxBufferedBytes) conn.ws.close(NOT_READING.code, NOT_READING.message)
  }
  const writer = createFrameWriter(send)
  const local = createLocalMembers(presence)
  /** The promise's value, or `fallback` (the failure reported) when the presence store failed. */
  const orElse = <T>(pending: Promise<T>, fallback: () => T): Promise<T> =>
    pending.catch((error: unknown) => {
      options.onPresenceError(error)
      return fallback()
    })

  async function subscribe(conn: Connection, data: Record<string, unknown>) {
    const checked = checkSubscription(options, conn.id, data)
    if ('error' in checked) return send(conn, errorFrame(checked.error))
    const { channel, kind, member } = checked
    if (conn.channels.has(channel)) return
    if (conn.access && !conn.access.mayJoin(channel)) return send(conn, errorFrame(PusherError.unauthorized))
    if (conn.channels.size >= limits.maxChannelsPerConnection)
      return send(conn, errorFrame(PusherError.tooManyChannels))
    const subscription: Subscription = member
      ? { kind, userId: member.userId }
      : kind === 'public'
        ? PUBLIC
        : PRIVATE
    let occupants = subscribers.get(channel)
    if (!occupants) {
      occupants = { channel, sockets: new Set() }
      subscribers.set(channel, occupants)
    }
    // The name the channel's other subscriptions use, rather than this frame's copy of it.
    conn.channels.set(occupants.channel, subscription)
    occupants.sockets.add(conn)

    const owner = options.userOfChannel(channel)
    if (owner) await orElse(local.joined(ONLINE, owner, null), () => false)
    if (!member) return send(conn, encodeFrame('pusher_internal:subscription_succeeded', '{}', channel))
    // Without the store, new to this instance's subscribers counts as new.
    const first = await orElse(
      local.joined(channel, member.userId, member.info),
      () => !announced.get(channel)?.has(member.userId),
    )
    const members = await orElse(presence.members(channel), () => presence.heldHere(channel))
    members.set(member.userId, member.info)
    announced.set(channel, new Set([...(announced.get(channel) ?? []), ...members.keys()]))
    const ids = [...members.keys()]
    send(
      conn,
      encodeFrame(
        'pusher_internal:subscription_succeeded',
        { presence: { count: ids.length, ids, hash: Object.fromEntries(members) } },
        channel,
      ),
    )
    if (first) {
      await bus.publish({
        channels: [channel],
        event: 'pusher_internal:member_added',
        data: JSON.stringify({ user_id: member.userId, user_info: member.info }),
        except: conn.id,
      })
    }
  }

  async function unsubscribe(conn: Connection, channel: string) {
    const subscription = conn.channels.get(channel)
    if (!subscription) return
    // Its grant stays: the signature could join it again, so the end of its access must still find it.
    conn.channels.delete(channel)
    const occupants = subscribers.get(channel)
    occupants?.sockets.delete(conn)
    if (occupants?.sockets.size === 0) {
      subscribers.delete(channel)
      announced.delete(channel)
      missingSince.delete(channel)
    }
    const owner = options.userOfChannel(channel)
    // Without the store, whether they are gone everywhere is not known: nothing is announced (the
    // reconciliation announces it once the store is back, if they did not come back meanwhile).
    if (owner && (await orElse(local.left(ONLINE, owner), () => false))) options.onOffline(owner)
    if (subscription.userId && (await orElse(local.left(channel, subscription.userId), () => false))) {
      await bus.publish({
        channels: [channel],
        event: 'pusher_internal:member_removed',
        data: JSON.stringify({ user_id: subscription.userId }),
      })
    }
  }

  /**
   * Whom a client event counts against: the user the socket belongs to, or one it has shown (a presence member, or its own user channel, which the app keeps open), else the
   * socket alone.
   */
  const clientEventSender = (conn: Connection) => {
    const owner = conn.access?.owner
    if (owner !== undefined) return `user:${owner}`
    for (const [channel, subscription] of conn.channels) {
      const userId = subscription.userId ?? options.userOfChannel(channel)
      if (userId) return `user:${userId}`
    }
    return `socket:${conn.id}`
  }

  /** A whisper: to the others on a private or presence channel the sender has joined, never back. */
  async function clientEvent(conn: Connection, frame: { event: string; channel?: unknown; data?: unknown }) {
    const subscription = typeof frame.channel === 'string' ? conn.channels.get(frame.channel) : undefined
    if (!subscription || subscription.kind === 'public')
      return send(conn, errorFrame(PusherError.unauthorized))
    const data = JSON.stringify(frame.data ?? {})
    if (Buffer.byteLength(data) > MAX_CLIENT_EVENT_BYTES) {
      return send(conn, errorFrame({ code: 4200, message: 'Client event is larger than 10 KB' }))
    }
    if (!clientEventLimits.allow(clientEventSender(conn), frame.channel as string, Date.now()))
      return send(conn, errorFrame(PusherError.rateLimited))
    await bus.publish({
      channels: [frame.channel as string],
      event: frame.event,
      data,
      except: conn.id,
      ...(subscription.userId ? { userId: subscription.userId } : {}),
    })
  }

  async function onMessage(conn: Connection, raw: string) {
    conn.lastActivity = Date.now()
    conn.pinged = false
    let frame: { event?: unknown; channel?: unknown; data?: unknown }
    try {
      frame = JSON.parse(raw)
      if (!frame || typeof frame !== 'object' || typeof frame.event !== 'string') throw new Error('no event')
    } catch {
      return send(conn, errorFrame(PusherError.invalidMessage))
    }
    const data = (frame.data && typeof frame.data === 'object' ? frame.data : {}) as Record<string, unknown>
    switch (frame.event) {
      case 'pusher:ping':
        return send(conn, encodeFrame('pusher:pong'))
      case 'pusher:pong':
        return
      case 'pusher:subscribe':
        return subscribe(conn, data)
      case 'pusher:unsubscribe':
        return typeof data.channel === 'string' ? unsubscribe(conn, data.channel) : undefined
      default:
        if (frame.event.startsWith('client-')) return clientEvent(conn, frame as { event: string })
    }
  }

  async function onClose(conn: Connection) {
    sockets.delete(conn.id)
    if (conn.access?.owner !== undefined) owners.released(conn.id)
    for (const channel of [...conn.channels.keys()]) await unsubscribe(conn, channel)
  }

  /** Counts a frame in the socket's window (Laravel's RateLimiter: a window opens at its first frame). */
  const countFrame = (conn: Connection, now: number): number => {
    if (now - conn.windowStart >= frameWindowMs) {
      conn.windowStart = now
      conn.frames = 0
    }
    return ++conn.frames
  }

  // The listeners of every socket: shared, each finds its socket's record from the socket (`this`).
  function onSocketMessage(this: WebSocket, raw: RawData) {
    const conn = connectionOf.get(this)
    if (!conn) return
    const hit = countFrame(conn, Date.now())
    const { maxAttempts } = limits.messageRateLimit
    if (hit > maxAttempts) {
      // Dropped unread. Told once per window, so a flood gets no flood of answers.
      if (hit === maxAttempts + 1) send(conn, errorFrame(PusherError.rateLimited))
      return
    }
    onMessage(conn, raw.toString()).catch((error: unknown) =>
      log.warn({ err: error }, 'socket message failed'),
    )
  }
  function onSocketPong(this: WebSocket) {
    const conn = connectionOf.get(this)
    if (conn) conn.lastActivity = Date.now()
  }
  function onSocketClose(this: WebSocket) {
    const conn = connectionOf.get(this)
    if (!conn) return
    conn.slot?.release()
    onClose(conn)
      .catch((error: unknown) => log.warn({ err: error }, 'socket close failed'))
      .finally(() => {
        if (--unhandled === 0) allHandled?.()
      })
  }
  const ignoreError = () => {}

  /** Whether the delivery leaves out this socket: the one it names, if it is the named owner's (when one is named). */
  const leftOut = (conn: Connection, delivery: Delivery) =>
    conn.id === delivery.except &&
    (delivery.exceptOwner === undefined || conn.access?.owner === delivery.exceptOwner)

  /** Sends a delivery to this instance's subscribers; keeps the presence lists they were told. */
  function deliver(delivery: Delivery) {
    for (const channel of delivery.channels) {
      const occupants = subscribers.get(channel)
      if (!occupants) continue
      if (
        delivery.event === 'pusher_internal:member_added' ||
        delivery.event === 'pusher_internal:member_removed'
      ) {
        const { user_id: userId } = JSON.parse(delivery.data) as { user_id: string }
        const known = announced.get(channel) ?? new Set()
        announced.set(channel, known)
        if (delivery.event.endsWith('added')) known.add(userId)
        else known.delete(userId)
      }
      // Encoded once for all its sockets: each write then copies no string into bytes.
      const frame = Buffer.from(encodeFrame(delivery.event, delivery.data, channel, delivery.userId))
      const targets: Connection[] = []
      for (const conn of occupants.sockets) if (!leftOut(conn, delivery)) targets.push(conn)
      writer.pushAll(targets, frame)
    }
    writer.flush()
  }
  bus.onDelivery(deliver)

  /**
   * Records a grant on the socket it names, if this instance holds it: nothing when the socket is
   * another user's; a socket with no room left to remember it is closed, to reconnect as a new one.
   */
  function recordGrant({ socketId, channel, userId, sessionId }: Grant) {
    const conn = sockets.get(socketId)
    if (!conn) return
    conn.access ??= new SocketAccess()
    const outcome = conn.access.grant(channel, { userId, sessionId }, maxGrants)
    if (outcome === 'recorded') owners.claimed(socketId, userId)
    else if (outcome === 'full') {
      send(conn, errorFrame(TOO_MANY_GRANTS))
      conn.ws.close(TOO_MANY_GRANTS.code, TOO_MANY_GRANTS.message)
    }
  }

  /**
   * Drops this instance's subscriptions whose access ended, telling each client (presence members
   * see member_removed as on any leave); a locked-out user's sockets are closed instead. Every
   * subscription is detached at once (the synchronous start of `unsubscribe`), so nothing more
   * reaches it or comes from it; the presence bookkeeping then runs side by side.
   */
  async function endAccess(ended: AccessEnded) {
    const leaving: Promise<void>[] = []
    for (const conn of [...sockets.values()]) {
      const { close, drop, released } = endAccessOn(conn, ended, options.userOfChannel)
      if (released) owners.released(conn.id)
      if (close) {
        for (const channel of [...conn.channels.keys()]) leaving.push(unsubscribe(conn, channel))
        send(conn, errorFrame(PusherError.unauthorized))
        conn.ws.close(PusherError.unauthorized.code, PusherError.unauthorized.message)
        continue
      }
      for (const channel of drop) {
        // Through the writer: after any event still queued for it (the GroupDeleted that ended it).
        writer.push(conn, subscriptionEndedFrame(channel))
        leaving.push(unsubscribe(conn, channel))
      }
    }
    writer.flush()
    await Promise.all(leaving)
  }

  bus.onNotice((notice: HubNotice) => {
    if ('grant' in notice) return recordGrant(notice.grant)
    endAccess(notice.accessEnded).catch((error: unknown) => log.warn({ err: error }, 'ending access failed'))
  })

  // Since when each member this instance's subscribers know of was missing from the store, by channel.
  const missingSince = new Map<string, Map<string, number>>()

  /**
   * Tells this instance's subscribers of members who came or went without a word: those of an
   * instance that crashed (its records expired) or whose announcement was lost. A member is
   * announced gone only once missing for the grace, and never while this instance holds their
   * socket: a Redis that restarted empty holds no one until every instance wrote its records again.
   */
  async function reconcile(now: number) {
    for (const [channel, known] of announced) {
      const members = await presence.members(channel)
      const heldHere = presence.heldHere(channel)
      const missing = missingSince.get(channel) ?? new Map<string, number>()
      missingSince.set(channel, missing)
      for (const userId of missing.keys())
        if (!known.has(userId) || members.has(userId)) missing.delete(userId)
      for (const userId of known) {
        if (members.has(userId) || heldHere.has(userId)) continue
        const since = missing.get(userId) ?? now
        missing.set(userId, since)
        if (now - since >= options.missingMemberGraceMs)
          deliver({
            channels: [channel],
            event: 'pusher_internal:member_removed',
            data: JSON.stringify({ user_id: userId }),
          })
      }
      if (missing.size === 0) missingSince.delete(channel)
      for (const [userId, info] of members) {
        if (!known.has(userId))
          deliver({
            channels: [channel],
            event: 'pusher_internal:member_added',
            data: JSON.stringify({ user_id: userId, user_info: info }),
          })
      }
    }
  }

  async function closeAll() {
    draining = true
    const all = [...sockets.values()]
    const handled =
      unhandled === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            allHandled = resolve
          })
    const spreadMs = options.drainSeconds * 1000
    await Promise.all(
      all.map(
        (conn, i) =>
          new Promise<void>((resolve) => {
            setTimeout(
              () => {
                conn.ws.close(RECONNECT_LATER.code, RECONNECT_LATER.message)
                resolve()
              },
              all.length > 1 ? (spreadMs * i) / (all.length - 1) : 0,
            )
          }),
      ),
    )
    // A client that never answers the close frame: ws ends it after its own 30 s, which the
    // listener's close would wait for; it is cut after 3 s instead.
    const within = (ms: number) =>
      Promise.race([handled, new Promise((resolve) => setTimeout(resolve, ms).unref())])
    await within(3000)
    for (const conn of all) if (conn.ws.readyState !== conn.ws.CLOSED) conn.ws.terminate()
    // The closes of those cut are handled too before the caller closes the presence store and the bus.
    await within(1000)
  }

  /** Pings a socket silent for the activity timeout, and closes one still silent a timeout later. */
  function sweepIdle(now: number) {
    const timeout = options.activityTimeoutSeconds * 1000
    for (const conn of sockets.values()) {
      const silent = now - conn.lastActivity
      if (silent > 2 * timeout) conn.ws.close(PusherError.pongTimeout.code, PusherError.pongTimeout.message)
      else if (silent > timeout && !conn.pinged) {
        conn.pinged = true
        // Both frames in one write: on a full instance many sockets fall silent together.
        conn.socket.cork()
        try {
          send(conn, PING)
          // A WebSocket ping too: proxies (nginx) see traffic and keep the connection.
          conn.ws.ping()
        } finally {
          conn.socket.uncork()
        }
      }
    }
  }

  return {
    /**
     * Takes a new socket (`ws`, over the upgraded `socket`): connection_established, or 4004 when
     * this instance is full. `slot`, its address's, is given back when the socket closes (refused or not).
     */
    accept(ws: WebSocket, socket: Duplex, slot?: AddressSlot) {
      const refused = draining || sockets.size >= options.maxConnections
      if (refused && slot) ws.once('close', () => slot.release())
      if (draining) {
        ws.close(RECONNECT_LATER.code, RECONNECT_LATER.message)
        return
      }
      if (sockets.size >= options.maxConnections) {
        ws.send(errorFrame(PusherError.overQuota))
        ws.close(PusherError.overQuota.code, PusherError.overQuota.message)
        return
      }
      const conn: Connection = {
        id: newSocketId(),
        ws,
        socket,
        channels: new SmallMap(),
        lastActivity: Date.now(),
        pinged: false,
        windowStart: Number.NEGATIVE_INFINITY,
        frames: 0,
        access: undefined,
        slot,
      }
      sockets.set(conn.id, conn)
      connectionOf.set(ws, conn)
      unhandled++
      // Handlers first, before anything is awaited, so no early frame is lost.
      ws.on('message', onSocketMessage)
      ws.on('pong', onSocketPong)
      ws.on('close', onSocketClose)
      ws.on('error', ignoreError)
      send(
        conn,
        encodeFrame('pusher:connection_established', {
          socket_id: conn.id,
          activity_timeout: options.activityTimeoutSeconds,
        }),
      )
    },

    /**
     * Publishes an event to channels on every instance; `except` leaves out one socket (toOthers),
     * only if it is `exceptOwner`'s when that is given (a request names its socket; it may lie).
     */
    publish: (channels: string[], event: string, data: unknown, except?: string, exceptOwner?: string) =>
      bus.publish({
        channels,
        event,
        data: typeof data === 'string' ? data : JSON.stringify(data),
        except,
        ...(exceptOwner === undefined ? {} : { exceptOwner }),
      }),

    /** Tells the instance holding the socket who authorized its channel (the auth route's request). */
    grant: (grant: Grant) => bus.notify({ grant }),

    /** Ends access on every instance: the subscriptions it covers are dropped, or the sockets closed. */
    endAccess: (ended: AccessEnded) => bus.notify({ accessEnded: ended }),

    /** Ends access on this instance's sockets alone (what only this instance found: lapsed sessions). */
    endAccessHere: (ended: AccessEnded) => endAccess(ended),

    /** The sessions that authorized a channel still granted on a socket of this instance. */
    authorizingSessions(): string[] {
      const found = new Set<string>()
      for (const conn of sockets.values()) conn.access?.collectSessions(found)
      return [...found]
    },

    /**
     * The user a socket belongs to (the first granted a channel on it), if known: this instance's
     * own sockets are known here; another's, from what it recorded in the shared store.
     */
    ownerOf(socketId: string): Promise<string | undefined> {
      const conn = sockets.get(socketId)
      return conn ? Promise.resolve(conn.access?.owner) : owners.ownerOf(socketId)
    },

    /** This instance's occupied channels with their socket counts. */
    channels(): Map<string, number> {
      return new Map([...subscribers].map(([channel, occupants]) => [channel, occupants.sockets.size]))
    },

    /** Users present on a presence channel (any instance; this one's alone while the store fails). */
    members: (channel: string) => orElse(presence.members(channel), () => presence.heldHere(channel)),

    /** Which of these users have a live socket on their own user channel (any instance; this one's alone while the store fails). */
    online: (userIds: string[]) =>
      orElse(presence.present(ONLINE, userIds), () => {
        const here = presence.heldHere(ONLINE)
        return new Set(userIds.filter((id) => here.has(id)))
      }),

    connectionCount: () => sockets.size,

    /** How many channels have a socket of this instance subscribed. */
    channelCount: () => subscribers.size,

    /** Subscriptions held for this instance's sockets (a socket on 3 channels counts 3). */
    subscriptionCount(): number {
      let count = 0
      for (const conn of sockets.values()) count += conn.channels.size
      return count
    },

    /** Bytes queued for this instance's sockets and not yet taken by the network. */
    bufferedBytes(): number {
      let bytes = 0
      for (const conn of sockets.values()) bytes += conn.ws.bufferedAmount
      return bytes
    },

    /**
     * Pings the sockets silent for the activity timeout, closes those silent for twice as long. Run
     * often (every second): each run then pings the few that fell silent since the last one.
     */
    sweepIdle: (now = Date.now()) => sweepIdle(now),

    /** The periodic work: presence records kept alive, crashed instances' members dropped. */
    async tick(now = Date.now()) {
      clientEventLimits.prune(now)
      try {
        await presence.heartbeat()
        await reconcile(now)
      } catch (error) {
        options.onPresenceError(error)
      }
    },

    /** Writes this instance's presence records again at once (the store came back, maybe empty). */
    rewritePresence: () => presence.rewrite().catch(options.onPresenceError),

    /**
     * Refuses new sockets and closes every open one with a reconnect-later code, spread over the
     * drain time, so their clients come back to the other instances a few at a time; resolves once
     * every close is handled (the others told of members who left), or a few seconds later with
     * the sockets still open cut. Once: a second call answers the first one's promise.
     */
    drain(): Promise<void> {
      drained ??= closeAll()
      return drained
    },
  }
}

export type Hub = ReturnType<typeof createHub>
