import type { UserRow } from '../../db/schema/index.ts'
import { forbidden } from '../../lib/errors.ts'
import { channelKind } from '../../lib/realtime/protocol.ts'
import { channelAuth } from '../../lib/realtime/signatures.ts'
import type { ChannelDecision } from './channels.ts'
import type { ChannelAuthBody, ChannelAuthResponse } from './realtime.schemas.ts'

/** Laravel's broadcasting auth: signs a socket's subscription to a channel the user may join. */
export function createChannelAuthService(deps: {
  key: string
  secret: string
  rules: (user: UserRow, channel: string) => Promise<ChannelDecision>
  /** The user the socket belongs to (the first one granted a channel on it), if known. */
  socketOwner: (socketId: string) => Promise<string | undefined>
}) {
  return {
    /**
     * `{auth}` (plus `channel_data` on presence channels, signed as sent); 403 when the user may not
     * join, or the socket is another user's (a grant there would do nothing).
     */
    async authorize(user: UserRow, input: ChannelAuthBody): Promise<ChannelAuthResponse> {
      const { socket_id: socketId, channel_name: channel } = input
      const kind = channelKind(channel)
      const decision = kind && kind !== 'public' ? await deps.rules(user, channel) : false
      if (!decision) throw forbidden()
      const owner = await deps.socketOwner(socketId)
      if (owner !== undefined && owner !== String(user.id)) throw forbidden()
      if (kind !== 'presence') return { auth: channelAuth(deps.key, deps.secret, socketId, channel) }
      // Pusher's presence member id is a string (pusher-http-php coerces it).
      const channelData = JSON.stringify({ user_id: String(user.id), user_info: decision.userInfo ?? null })
      return {
        auth: channelAuth(deps.key, deps.secret, socketId, channel, channelData),
        channel_data: channelData,
      }
    },
  }
}
