import { type Static, Type } from 'typebox'

export const ChannelAuthBody = Type.Object({
  socket_id: Type.String({ pattern: '^\\d{1,10}\\.\\d{1,10}$', examples: ['123456789.987654321'] }),
  channel_name: Type.String({ minLength: 1, maxLength: 164, examples: ['private-chat.group.7'] }),
})
export type ChannelAuthBody = Static<typeof ChannelAuthBody>

export const ChannelAuthResponse = Type.Object({
  auth: Type.String({ description: '`KEY:signature`, for pusher:subscribe.' }),
  channel_data: Type.Optional(Type.String({ description: 'Presence channels: the member, as signed.' })),
})
export type ChannelAuthResponse = Static<typeof ChannelAuthResponse>
