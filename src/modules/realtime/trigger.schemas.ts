import { type Static, Type } from 'typebox'

const Name = Type.String({ minLength: 1, maxLength: 200 })
const Channel = Type.String({ minLength: 1, maxLength: 164, pattern: '^[-a-zA-Z0-9_=@,.;]+$' })
const SocketId = Type.String({ pattern: '^\\d{1,10}\\.\\d{1,10}$' })
const Data = Type.String({ description: 'The event payload, JSON-encoded as a string (at most 10 KB).' })

export const AppParams = Type.Object({ appId: Type.String({ maxLength: 64 }) })
export const ChannelParams = Type.Object({ appId: Type.String({ maxLength: 64 }), channel: Channel })

/** Pusher's signed query (checked before anything else). */
export const SignedQuery = Type.Object({
  auth_key: Type.Optional(Type.String({ maxLength: 128 })),
  auth_timestamp: Type.Optional(Type.String({ maxLength: 20 })),
  auth_version: Type.Optional(Type.String({ maxLength: 10 })),
  body_md5: Type.Optional(Type.String({ maxLength: 32 })),
  auth_signature: Type.Optional(Type.String({ maxLength: 64 })),
  info: Type.Optional(Type.String({ maxLength: 100 })),
  filter_by_prefix: Type.Optional(Type.String({ maxLength: 164 })),
})

export const TriggerBody = Type.Object({
  name: Name,
  data: Data,
  channels: Type.Optional(Type.Array(Channel, { minItems: 1, description: 'At most 100.' })),
  channel: Type.Optional(Channel),
  socket_id: Type.Optional(SocketId),
})
export type TriggerBody = Static<typeof TriggerBody>

export const BatchBody = Type.Object({
  batch: Type.Array(
    Type.Object({ name: Name, data: Data, channel: Channel, socket_id: Type.Optional(SocketId) }),
    { description: 'At most 10 events.' },
  ),
})
export type BatchBody = Static<typeof BatchBody>

export const EmptyResponse = Type.Object({})
export const ChannelsResponse = Type.Object({
  channels: Type.Record(Type.String(), Type.Object({ user_count: Type.Optional(Type.Integer()) })),
})
export const ChannelResponse = Type.Object({
  occupied: Type.Boolean(),
  subscription_count: Type.Optional(Type.Integer()),
  user_count: Type.Optional(Type.Integer()),
})
export const UsersResponse = Type.Object({ users: Type.Array(Type.Object({ id: Type.String() })) })
