import { HttpError, ValidationError } from './errors.ts'

/**
 * A failure while reading a multipart body, as the client should hear it: @fastify/multipart's
 * limits (too many parts or files) are 413s; a field named after a member of Object.prototype
 * (`__proto__`, `constructor`, ...) is refused by it before its name is known, a 422 as any other
 * reserved key is; busboy's own errors (a broken body) carry no status.
 */
export function multipartFailure(error: unknown): HttpError {
  const { statusCode, code } = error as { statusCode?: number; code?: string }
  if (statusCode === 413) return new HttpError(413, 'The request has too many parts.')
  if (code === 'FST_PROTO_VIOLATION') {
    return ValidationError.withMessages({
      form: ['A form field has a reserved name (__proto__, constructor, prototype and the like).'],
    })
  }
  return new HttpError(400, 'The request body is not valid multipart form data.')
}
