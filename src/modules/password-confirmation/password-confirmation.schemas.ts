import { type Static, Type } from 'typebox'

export const ConfirmPasswordBody = Type.Object({
  password: Type.String({ minLength: 1, maxLength: 1024 }),
})
export type ConfirmPasswordBody = Static<typeof ConfirmPasswordBody>

// Fortify's ConfirmedPasswordStatusController reads an optional `seconds` window instead of the timeout.
export const ConfirmationStatusQuery = Type.Object({
  seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
})
export type ConfirmationStatusQuery = Static<typeof ConfirmationStatusQuery>

export const ConfirmationStatusResponse = Type.Object({ confirmed: Type.Boolean() })

/** Fortify's PasswordConfirmedResponse to a JSON client: `new JsonResponse('', 201)`, the body `""`. */
export const ConfirmedResponse = Type.String({ description: 'Always the empty string', examples: [''] })
