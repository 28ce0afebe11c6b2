import { type Static, Type } from 'typebox'

// The recent password confirmation (423 without it) is what lets enabling and disabling through, as
// in Fortify; a password sent along is still checked, for clients that ask for it on the same form.
export const PasswordBody = Type.Object({
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
})
export type PasswordBody = Static<typeof PasswordBody>

export const ConfirmBody = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 64 }),
})
export type ConfirmBody = Static<typeof ConfirmBody>

// Fortify's TwoFactorLoginRequest: both `nullable|string`; which one was sent decides what is checked.
export const ChallengeBody = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 64 })),
  recovery_code: Type.Optional(Type.String({ maxLength: 255 })),
})
export type ChallengeBody = Static<typeof ChallengeBody>

export const RecoveryCodes = Type.Array(Type.String(), {
  examples: [['AbCdEfGhIj-KlMnOpQrSt']],
})

/** What enabling answers: the only answer that ever carries the secret. */
export const EnableResponse = Type.Object({
  secret: Type.String({ description: 'Base32 TOTP secret, for manual entry' }),
  otpauth_url: Type.String(),
  qr_svg: Type.String({ description: 'The otpauth URL as an SVG QR code' }),
  recovery_codes: RecoveryCodes,
})
export type EnableResponse = Static<typeof EnableResponse>

export const TwoFactorStateResponse = Type.Object({ two_factor_enabled: Type.Boolean() })

export const ChallengeResponse = Type.Object({ two_factor: Type.Boolean() })
