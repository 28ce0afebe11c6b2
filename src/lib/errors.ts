import { type FieldErrors, summarizeErrors } from './validation.ts'

/** An error with an HTTP status whose message is safe to show; the error handler renders it as `{message}`. */
export class HttpError extends Error {
  readonly status: number
  readonly headers: Record<string, string>
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.status = status
    this.headers = headers
  }
}

/** Laravel's ValidationException: rendered as `{message, errors}`, 422 unless a status is given. */
export class ValidationError extends HttpError {
  readonly errors: FieldErrors
  constructor(errors: FieldErrors, status = 422, headers: Record<string, string> = {}) {
    super(status, summarizeErrors(errors), headers)
    this.errors = errors
  }

  static withMessages(errors: FieldErrors): ValidationError {
    return new ValidationError(errors)
  }
}

export const unauthenticated = () => new HttpError(401, 'Unauthenticated.')
export const forbidden = (message = 'This action is unauthorized.') => new HttpError(403, message)
export const notFound = (message = 'Not Found') => new HttpError(404, message)
export const csrfMismatch = () => new HttpError(419, 'CSRF token mismatch.')
/** Laravel 13's PreventRequestForgery: an unsafe request sent from a page of a foreign origin. */
export const originMismatch = () => new HttpError(403, 'Origin mismatch.')
export const emailNotVerified = () => new HttpError(403, 'Your email address is not verified.')
/** Laravel's RequirePassword middleware, to a JSON client: the password was not confirmed lately. */
export const passwordConfirmationRequired = () => new HttpError(423, 'Password confirmation required.')
export const tooManyAttempts = (headers: Record<string, string>) =>
  new HttpError(429, 'Too Many Attempts.', headers)

/** An error as it may be stored and logged: its code and message, any URL credentials masked, bounded. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown } | null)?.code
  const text = typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message
  return text.replace(/\/\/[^/@\s]*@/g, '//***@').slice(0, 1000)
}
