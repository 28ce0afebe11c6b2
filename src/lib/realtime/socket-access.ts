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
  /** Only subscriptions this user authorized (or is the presence member or channel owner of). */
  userId?: string
  /** Only those authorized through this session (its logout). */
  sessionId?: string
  /** Only those authorized through one of these sessions (ones that expired, idle or too old). */
  sessionIds?: string[]
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

/** What became of a grant: recorded; refused, the socket being another user's; or no room left to remember it. */
export type GrantOutcome = 'recorded' | 'another-users' | 'full'

/**
 * One socket's authorizations, as the auth route told them (before or after the subscribe frame:
 * they travel different ways). A signature is valid for the socket's whole life, so every channel
 * ever granted is remembered, joined or not, left or not: when the reason for it ends, it ends
 * here too (null), and joining it again takes a grant given after the end. At most `limit`
 * channels are remembered (the hub closes a socket past it, to reconnect as a new one).
 *
 * The socket belongs to the first user granted a channel on it: a grant from anyone else is
 * refused, so that nobody can give or take channels on a socket that is not theirs. Once none of
 * the owner's grants is left (their session ended, say), the next user granted one owns it.
 */
export class SocketAccess {
  // Small containers: a socket normally holds a grant or two, from one session (see SmallMap).
  private readonly channels = new SmallMap<string, Authorizer | null>()
  private user: string | undefined

  /** The user the socket belongs to, if any grant of theirs is left on it. */
  get owner(): string | undefined {
    return this.user
  }

  /** Records that `by` authorized `channel` here, unless the socket is another user's or full. */
  grant(channel: string, by: Authorizer, limit: number): GrantOutcome {
    if (this.user !== undefined && this.user !== by.userId) return 'another-users'
    if (!this.channels.has(channel) && this.channels.size >= limit) return 'full'
    this.user = by.userId
    this.channels.set(channel, this.authorizer(by))
    return 'recorded'
  }

  /** `by` as a record of its own (not the notice it came in), shared by the grants of one session. */
  private authorizer(by: Authorizer): Authorizer {
    for (const [, grant] of this.channels)
      if (grant && grant.userId === by.userId && grant.sessionId === by.sessionId) return grant
    return { userId: by.userId, sessionId: by.sessionId }
  }

  /** False for a channel whose access ended here and was not granted again since. */
  mayJoin(channel: string): boolean {
    return this.channels.get(channel) !== null
  }

  /** Whether `access` covers this socket's subscription (or remembered grant) to `channel`. */
  covers(access: AccessEnded, channel: string, subscription: SubscriptionUser = {}): boolean {
    if (access.channels && !access.channels.includes(channel)) return false
    // Nobody authorized a public channel: its access never ends.
    if (channelKind(channel) === 'public') return false
    const grant = this.channels.get(channel) ?? undefined
    if (access.userId !== undefined) {
      // A subscription whose grant has not arrived yet: likely its socket's owner's.
      const user = grant?.userId ?? subscription.member ?? subscription.owner ?? this.user
      if (user !== access.userId) return false
    }
    if (access.sessionId !== undefined && grant?.sessionId !== access.sessionId) return false
    if (access.sessionIds !== undefined && !(grant && access.sessionIds.includes(grant.sessionId)))
      return false
    // A subscription whose grant has not arrived cannot show it is the kept session's: it ends.
    if (access.exceptSessionId !== undefined && grant?.sessionId === access.exceptSessionId) return false
    return true
  }

  /**
   * These channels' access ended here: their grants go, and joining them again takes new ones.
   * True when that took the owner's last grant: the socket is nobody's now.
   */
  end(channels: string[]): boolean {
    for (const channel of channels) this.channels.set(channel, null)
    if (this.user === undefined) return false
    for (const [, grant] of this.channels) if (grant) return false
    this.user = undefined
    return true
  }

  /** The channels granted but not subscribed now that `access` covers. */
  grantedCovered(access: AccessEnded, subscribed: { has(channel: string): boolean }): string[] {
    const covered: string[] = []
    for (const [channel, grant] of this.channels)
      if (grant && !subscribed.has(channel) && this.covers(access, channel)) covered.push(channel)
    return covered
  }

  /** Adds to `into` the sessions that authorized a channel still granted here. */
  collectSessions(into: Set<string>): void {
    for (const [, grant] of this.channels) if (grant) into.add(grant.sessionId)
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
 * marked ended. Answers the subscriptions to drop, `close` for a locked-out user's socket, and
 * `released` when the socket's owner has no grant left on it.
 */
export function endAccessOn(
  socket: SocketRecord,
  ended: AccessEnded,
  ownerOf: (channel: string) => string | null,
): { close: boolean; drop: string[]; released: boolean } {
  const access = socket.access ?? NO_GRANTS
  const drop = [...socket.channels]
    .filter(([channel, { userId }]) =>
      access.covers(ended, channel, { member: userId, owner: ownerOf(channel) }),
    )
    .map(([channel]) => channel)
  const ending = [...drop, ...access.grantedCovered(ended, socket.channels)]
  const theirs = ended.userId !== undefined && access.owner === ended.userId
  let released = false
  if (ending.length > 0) {
    socket.access ??= new SocketAccess()
    released = socket.access.end(ending)
  }
  return { close: ended.closeSockets === true && (theirs || drop.length > 0), drop, released }
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
