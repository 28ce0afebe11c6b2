import { type Static, Type } from 'typebox'
import { ChatTimestamp, ChatUser, IdParam } from '../chat.schemas.ts'

export const UserParams = Type.Object({ user: IdParam })
export type UserParams = Static<typeof UserParams>

export const PersonResponse = Type.Object({
  data: Type.Object({ ...ChatUser.properties, created_at: ChatTimestamp }),
})
export type PersonResponse = Static<typeof PersonResponse>

export const PersonStatusResponse = Type.Object({
  data: Type.Object({
    id: Type.Integer(),
    online: Type.Boolean({ description: 'Session activity within the last 5 minutes.' }),
    last_seen_at: Type.Union([ChatTimestamp, Type.Null()], {
      description: 'The latest activity of a live session; null when they have none.',
    }),
  }),
})
export type PersonStatusResponse = Static<typeof PersonStatusResponse>
