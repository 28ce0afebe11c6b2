import { type Static, Type } from 'typebox'

/**
 * The query of the link mailed by sendLink. Loose on purpose: a link altered in any of these is a
 * 403 from the signature check, not a validation error; the bounds only keep junk out.
 */
export const VerifyEmailQuery = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  hash: Type.String({ minLength: 1, maxLength: 128 }),
  expires: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  signature: Type.String({ minLength: 1, maxLength: 128 }),
})
export type VerifyEmailQuery = Static<typeof VerifyEmailQuery>
