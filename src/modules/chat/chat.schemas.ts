import { type Static, type TSchema, Type } from 'typebox'

const Timestamp = Type.String({ format: 'date-time', examples: ['2024-05-01T12:34:56.000000Z'] })
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })

export const ChatTimestamp = Timestamp

/** A path id (`{group}`, `{message}`, ...): anything but a positive integer names nothing (404). */
export const IdParam = Id

export const GroupParams = Type.Object({ group: Id })
export type GroupParams = Static<typeof GroupParams>

/** Who wrote something, as any member may see them: never an email address. */
export const ChatUser = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  profile_photo_url: nullable(Type.String({ format: 'uri' })),
})
export type ChatUser = Static<typeof ChatUser>

export const Group = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  description: nullable(Type.String()),
  is_private: Type.Boolean(),
  owner_id: Type.Integer(),
  member_count: Type.Integer(),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type Group = Static<typeof Group>

export const Attachment = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  mime_type: Type.String({ examples: ['image/png'] }),
  size: Type.Integer({ description: 'Bytes.' }),
  url: Type.String({ format: 'uri', description: 'Served to members of the group only.' }),
})
export type Attachment = Static<typeof Attachment>

export const Message = Type.Object({
  id: Type.Integer(),
  group_id: Type.Integer(),
  kind: Type.Enum(['user', 'assistant', 'system'], {
    description:
      '`user`: written by a member; `assistant`: the AI assistant; `system`: joins, leaves, answers.',
  }),
  user: nullable(ChatUser),
  body: Type.String({ description: 'Empty when the message is only attachments.' }),
  attachments: Type.Array(Attachment),
  created_at: Timestamp,
})
export type Message = Static<typeof Message>

export const MessageResponse = Type.Object({ data: Message })
export const GroupResponse = Type.Object({ data: Group })
