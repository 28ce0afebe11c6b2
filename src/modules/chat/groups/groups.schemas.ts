import { type Static, type TSchema, Type } from 'typebox'
import { ChatTimestamp, ChatUser, Group, Message } from '../chat.schemas.ts'

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const MAX_NAME = 100
export const MAX_DESCRIPTION = 1000
/** Messages a group view shows: the newest, oldest first; `GET /api/message/older/{id}` pages back. */
export const VIEW_MESSAGES = 50

const Name = Type.String({ minLength: 1, maxLength: MAX_NAME, examples: ['Swing traders'] })
const Description = Type.String({ maxLength: MAX_DESCRIPTION })

export const CreateGroupBody = Type.Object({
  name: Name,
  description: Type.Optional(nullable(Description)),
  is_private: Type.Optional(Type.Boolean({ default: false })),
})
export type CreateGroupBody = Static<typeof CreateGroupBody>

export const UpdateGroupBody = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(nullable(Description)),
  is_private: Type.Optional(Type.Boolean()),
  owner_id: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Hands ownership to this member; the owner becomes a member.',
    }),
  ),
})
export type UpdateGroupBody = Static<typeof UpdateGroupBody>

const Role = Type.Enum(['owner', 'member'])

export const GroupView = Type.Object({
  ...Group.properties,
  membership: nullable(Type.Object({ role: Role, joined_at: ChatTimestamp })),
  members: Type.Array(Type.Object({ ...ChatUser.properties, role: Role, joined_at: ChatTimestamp })),
  messages: Type.Optional(Type.Array(Message, { description: 'Members (and site admins) only.' })),
  has_more_messages: Type.Optional(Type.Boolean()),
  join_requests: Type.Optional(
    Type.Array(Type.Object({ id: Type.Integer(), user: ChatUser, created_at: ChatTimestamp }), {
      description: 'The owner only: pending requests to join, oldest first.',
    }),
  ),
})
export type GroupView = Static<typeof GroupView>

export const JoinResponse = Type.Object({
  data: Type.Union([
    Type.Object({ status: Type.Literal('member') }),
    Type.Object({ status: Type.Literal('pending'), join_request_id: Type.Integer() }),
  ]),
})
export type JoinResponse = Static<typeof JoinResponse>

export const GroupStatusResponse = Type.Object({
  data: Type.Object({
    is_member: Type.Boolean(),
    role: nullable(Role),
    join_request: nullable(
      Type.Object({ id: Type.Integer(), status: Type.Enum(['pending', 'approved', 'declined']) }),
    ),
    unread_count: Type.Integer(),
    online_count: nullable(
      Type.Integer({ description: 'Online members; null unless the caller is a member.' }),
    ),
  }),
})
export type GroupStatusResponse = Static<typeof GroupStatusResponse>

export const SidebarResponse = Type.Object({
  data: Type.Array(
    Type.Object({
      group: Type.Object({
        id: Type.Integer(),
        name: Type.String(),
        is_private: Type.Boolean(),
        member_count: Type.Integer(),
      }),
      last_message: nullable(Message),
      unread_count: Type.Integer(),
      last_activity_at: ChatTimestamp,
    }),
  ),
})
export type SidebarResponse = Static<typeof SidebarResponse>
