import { type Static, Type } from 'typebox'

export const RegisterBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  email: Type.String({ minLength: 1, maxLength: 255, format: 'email' }),
  password: Type.String({ minLength: 8, maxLength: 255 }),
  password_confirmation: Type.Optional(Type.String({ maxLength: 255 })),
})
export type RegisterBody = Static<typeof RegisterBody>

// Fortify's LoginRequest: `email required|string`, `password required|string`; no format rule.
export const LoginBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 255 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  remember: Type.Optional(Type.Boolean()),
})
export type LoginBody = Static<typeof LoginBody>

export const LoginResponse = Type.Object({ two_factor: Type.Boolean() })
