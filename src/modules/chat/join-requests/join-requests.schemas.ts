import { type Static, Type } from 'typebox'
import { IdParam } from '../chat.schemas.ts'

export const JoinRequestParams = Type.Object({ joinRequest: IdParam })
export type JoinRequestParams = Static<typeof JoinRequestParams>

export const RespondBody = Type.Object({ action: Type.Enum(['approve', 'decline']) })
export type RespondBody = Static<typeof RespondBody>

export const JoinRequest = Type.Object({
  id: Type.Integer(),
  group_id: Type.Integer(),
  user_id: Type.Integer(),
  status: Type.Enum(['pending', 'approved', 'declined']),
})
export type JoinRequest = Static<typeof JoinRequest>

export const JoinRequestResponse = Type.Object({ data: JoinRequest })
