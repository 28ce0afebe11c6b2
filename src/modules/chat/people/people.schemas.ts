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
    online: Type.Boolean({ description: 'A live socket on their own user channel (the app is open).' }),
    last_seen_at: Type.Union([ChatTimestamp, Type.Null()], {
      description: 'Now when online; else when their last socket closed (kept 30 days), or null.',
    }),
  }),
})
export type PersonStatusResponse = Static<typeof PersonStatusResponse>
