import { Type } from 'typebox'

/** Laravel's `{message}` body (401, 403, 404, 405, 419, 429, 500). */
export const MessageResponse = Type.Object({ message: Type.String() })

/** Laravel's validation body: `{message, errors: {field: [messages]}}`. */
export const ValidationResponse = Type.Object({
  message: Type.String(),
  errors: Type.Record(Type.String(), Type.Array(Type.String())),
})

/** The statuses any JSON route can answer besides its own success. */
export const commonErrorResponses = {
  422: ValidationResponse,
  '4xx': MessageResponse,
  500: MessageResponse,
}
