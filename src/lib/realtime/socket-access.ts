import { channelKind, encodeFrame } from './protocol.ts'
import { SmallMap } from './small-map.ts'

/** Who authorized a subscription at the auth route: the user, and the session of that request. */
export interface Authorizer {
  userId: string
  /** The session row's id (the SHA-256 of its cookie), never the cookie itself. */
  sessionId: string
}

/** A channel authorized for a socket, told to every instance: the one holding the socket records it. */
export interface Grant extends Authorizer {
  socketId: string
  channel: string
}

/**
 * Access that ended, told to every instance: which subscriptions to drop. Every condition given
 * must hold; none given (but `channels`) means everyone's.
 */
export interface AccessEnded {
  /** Only these channels (a group left or deleted); all of them when absent. */
  channels?: string[]
  /** Only subscriptions this user authorized (or is the presence member or owner of). */
  userId?: string
  /** Only those authorized through this session (its logout). */
  sessionId?: string
  /** Not those authorized through this session (the changer's own, on a password change). */
  exceptSessionId?: string
  /** The user may use nothing any more (blocked, deleted): their sockets are closed. */
  closeSockets?: boolean
}

/** What a subscription says of its user besides its grant: presence member, user-channel owner. */
export interface SubscriptionUser {
  member?: string
  owner?: string | null
}

const NO_USERS: readonly string[] = Object.freeze([])

/**
 * One socket's authorizations, by channel, as the auth route told them (before or after the
 * subscribe frame: they travel different ways), and the channels whose access ended on it: a
 * signature is valid for the socket's whole life, so such a channel takes a grant given after the
 * end before it may be joined again.
 */
export class SocketAccess {
  // Small containers: a socket normally holds a grant or two, from one user (see SmallMap).
  private readonly grants = new SmallMap<string, Authorizer>()
  private ended: Set<string> | undefined
  private authorizers: readonly string[] = NO_USERS

  /** Every user who authorized something on this socket (normally one), in the order they did. */
  get users(): readonly string[] {
    return this.authorizers
  }

  grant(channel: string, by: Authorizer): void {
    this.grants.set(channel, by)
    if (!this.authorizers.includes(by.userId)) this.authorizers = this.authorizers.concat(by.userId)
    this.ended?.delete(channel)
  }

  /** False for a channel whose access ended here and was not granted again since. */
  mayJoin(channel: string): boolean {
    return !this.ended?.has(channel) || this.grants.has(channel)
  }

  /** The socket left the channel: its grant is spent (pusher-js authorizes every subscribe anew). */
  left(channel: string): void {
    this.grants.delete(channel)
  }

  /** Whether `access` covers this socket's subscription (or pending grant) to `channel`. */
  covers(access: AccessEnded, channel: string, subscription: SubscriptionUser = {}): boolean {
    if (access.channels && !access.channels.includes(channel)) return false
    // Nobody authorized a public channel: its access never ends.
    if (channelKind(channel) === 'public') return false
    const grant = this.grants.get(channel)
    if (access.userId !== undefined) {
      const user = grant?.userId ?? subscription.member ?? subscription.owner ?? this.onlyUser()
      if (user !== access.userId) return false
    }
    if (access.sessionId !== undefined && grant?.sessionId !== access.sessionId) return false
    // A subscription whose grant has not arrived cannot show it is the kept session's: it ends.
    if (access.exceptSessionId !== undefined && grant?.sessionId === access.exceptSessionId) return false
    return true
  }

  /** The one user who authorized anything here, if one did: the likely author of a grant still on its way. */
  private onlyUser(): string | undefined {
    return this.users.length === 1 ? this.users[0] : undefined
  }

  /** The channel's access ended here: its grant goes, and joining it again takes a new one. */
  end(channel: string): void {
    this.grants.delete(channel)
    this.ended ??= new Set()
    this.ended.add(channel)
  }

  /** The channels granted but not (yet) subscribed that `access` covers. */
  pendingCovered(access: AccessEnded, subscribed: { has(channel: string): boolean }): string[] {
    return [...this.grants.keys()].filter(
      (channel) => !subscribed.has(channel) && this.covers(access, channel),
    )
  }
}

/** The socket's side of the hub, as ending access needs it. */
interface SocketRecord {
  access?: SocketAccess | undefined
  readonly channels: Iterable<[string, { userId?: string }]> & { has(channel: string): boolean }
}

// Read only: a socket nobody's grant reached, where only what its subscriptions say of their user counts.
const NO_GRANTS = new SocketAccess()

/**
 * Applies `ended` to one socket: the channels it covers there (subscribed or only granted) are
 * marked ended. Answers the subscriptions to drop, or `close` for a locked-out user's socket.
 */
export function endAccessOn(
  socket: SocketRecord,
  ended: AccessEnded,
  ownerOf: (channel: string) => string | null,
): { close: boolean; drop: string[] } {
  const access = socket.access ?? NO_GRANTS
  const drop = [...socket.channels]
    .filter(([channel, { userId }]) =>
      access.covers(ended, channel, { member: userId, owner: ownerOf(channel) }),
    )
    .map(([channel]) => channel)
  const ending = [...drop, ...access.pendingCovered(ended, socket.channels)]
  if (ending.length > 0) {
    socket.access ??= new SocketAccess()
    for (const channel of ending) socket.access.end(channel)
  }
  const theirs = ended.userId !== undefined && access.users.includes(ended.userId)
  return { close: ended.closeSockets === true && (theirs || drop.length > 0), drop }
}

/**
 * Tells pusher-js the subscription is over, as it tells of a refused authorization: the channel's
 * `pusher:subscription_error` callbacks (Echo's `.error()`) get `{type: 'AuthError', error, status}`.
 */
export const subscriptionEndedFrame = (channel: string) =>
  encodeFrame(
    'pusher:subscription_error',
    { type: 'AuthError', error: 'Access to this channel has ended.', status: 403 },
    channel,
  )
