import { HttpError } from './errors.ts'

/**
 * A failure while reading a multipart body, as the client should hear it: @fastify/multipart's
 * limits (too many parts or files) are 413s; busboy's own errors (a broken body) carry no status.
 */
export function multipartFailure(error: unknown): HttpError {
  if ((error as { statusCode?: number }).statusCode === 413) {
    return new HttpError(413, 'The request has too many parts.')
  }
  return new HttpError(400, 'The request body is not valid multipart form data.')
}
