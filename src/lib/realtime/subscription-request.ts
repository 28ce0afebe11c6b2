import { type ChannelKind, channelKind, PusherError } from './protocol.ts'
import { validChannelAuth } from './signatures.ts'

/** A `pusher:subscribe` that passed: the channel, its kind, and on presence channels the member. */
export interface AcceptedSubscription {
  channel: string
  kind: ChannelKind
  member: { userId: string; info: unknown } | null
}

/**
 * Checks a `pusher:subscribe` from socket `socketId`: a valid channel name, and for private and
 * presence channels the signature over exactly the strings sent (constant time). Answers the
 * subscription, or the Pusher error to send back, as Reverb does.
 */
export function checkSubscription(
  app: { key: string; secret: string },
  socketId: string,
  data: Record<string, unknown>,
): AcceptedSubscription | { error: { code: number; message: string } } {
  const channel = data.channel
  const kind = channelKind(channel)
  if (!kind || typeof channel !== 'string') return { error: PusherError.unauthorized }
  if (kind === 'public') return { channel, kind, member: null }
  const channelData = kind === 'presence' ? data.channel_data : undefined
  if (kind === 'presence' && typeof channelData !== 'string') return { error: PusherError.unauthorized }
  const signed = validChannelAuth(
    app.key,
    app.secret,
    socketId,
    channel,
    data.auth,
    channelData as string | undefined,
  )
  if (!signed) return { error: PusherError.unauthorized }
  if (kind === 'private') return { channel, kind, member: null }
  try {
    const parsed = JSON.parse(channelData as string) as { user_id?: unknown; user_info?: unknown }
    if (typeof parsed.user_id !== 'string' && typeof parsed.user_id !== 'number')
      throw new Error('no user_id')
    return { channel, kind, member: { userId: String(parsed.user_id), info: parsed.user_info ?? null } }
  } catch {
    return { error: PusherError.invalidMessage }
  }
}
