import { type Static, Type } from 'typebox'
import { ChatTimestamp, IdParam } from '../chat.schemas.ts'

export const MAX_EMAILS = 20
/** How long an invitation link works. */
export const INVITE_DAYS = 7

const Email = Type.String({ minLength: 1, maxLength: 255, format: 'email' })

export const InviteBody = Type.Object({ group_id: IdParam, email: Email })
export type InviteBody = Static<typeof InviteBody>

export const InviteManyBody = Type.Object({
  emails: Type.Array(Email, { minItems: 1, maxItems: MAX_EMAILS }),
})
export type InviteManyBody = Static<typeof InviteManyBody>

export const InviteParams = Type.Object({ id: IdParam })
export type InviteParams = Static<typeof InviteParams>

export const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 255 }) })
export type TokenParams = Static<typeof TokenParams>

export const AcceptInviteBody = Type.Object({
  token: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: 'From the invitation link.' }),
  ),
  invite_id: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Instead of the token, for a caller whose verified email is the invitation’s.',
    }),
  ),
})
export type AcceptInviteBody = Static<typeof AcceptInviteBody>

export const INVITE_STATUSES = ['pending', 'accepted', 'declined', 'revoked', 'expired'] as const
export type InviteStatus = (typeof INVITE_STATUSES)[number]

export const Invite = Type.Object({
  id: Type.Integer(),
  group: Type.Object({ id: Type.Integer(), name: Type.String() }),
  email: Type.String(),
  invited_by: Type.Union([Type.Object({ id: Type.Integer(), name: Type.String() }), Type.Null()]),
  status: Type.Enum([...INVITE_STATUSES]),
  expires_at: ChatTimestamp,
  created_at: ChatTimestamp,
})
export type Invite = Static<typeof Invite>

export const InviteResponse = Type.Object({ data: Invite })
export const InviteListResponse = Type.Object({ data: Type.Array(Invite) })

export const ValidateInviteResponse = Type.Object({
  data: Type.Union([
    Type.Object({
      valid: Type.Literal(true),
      group: Type.Object({ id: Type.Integer(), name: Type.String(), member_count: Type.Integer() }),
      email_matches: Type.Boolean(),
      expires_at: ChatTimestamp,
    }),
    Type.Object({
      valid: Type.Literal(false),
      reason: Type.Enum(['unknown', 'expired', 'revoked', 'accepted', 'declined']),
    }),
  ]),
})
export type ValidateInviteResponse = Static<typeof ValidateInviteResponse>
