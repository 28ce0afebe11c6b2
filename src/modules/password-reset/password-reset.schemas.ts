import { type Static, Type } from 'typebox'

const Email = Type.String({ minLength: 1, maxLength: 255, format: 'email' })

// Fortify's forgot-password: `email required|email`.
export const ForgotPasswordBody = Type.Object({ email: Email })
export type ForgotPasswordBody = Static<typeof ForgotPasswordBody>

// Fortify's reset-password: token and email required, then the registration password rules.
export const ResetPasswordBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 255 }),
  email: Email,
  password: Type.String({ minLength: 8, maxLength: 255 }),
  password_confirmation: Type.Optional(Type.String({ maxLength: 255 })),
})
export type ResetPasswordBody = Static<typeof ResetPasswordBody>
