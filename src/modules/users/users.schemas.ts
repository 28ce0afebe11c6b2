import { type Static, Type } from 'typebox'

const Timestamp = Type.String({ format: 'date-time', examples: ['2024-05-01T12:34:56.000000Z'] })

/** The user object the app reads from `GET /api/user` and registration. */
export const UserResponse = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  email: Type.String(),
  email_verified_at: Type.Union([Timestamp, Type.Null()]),
  is_admin: Type.Boolean(),
  two_factor_enabled: Type.Boolean(),
  profile_photo_url: Type.Union([Type.String({ format: 'uri' }), Type.Null()]),
  phone: Type.Union([Type.String({ examples: ['+33612345678'] }), Type.Null()]),
  timezone: Type.Union([Type.String({ examples: ['Europe/Paris'] }), Type.Null()]),
  country: Type.Union([Type.String({ examples: ['FR'] }), Type.Null()]),
  available_credits: Type.Number(),
  held_credits: Type.Number(),
  credits_available_for_automation: Type.Number(),
  created_at: Timestamp,
  updated_at: Timestamp,
})
export type UserResponse = Static<typeof UserResponse>
