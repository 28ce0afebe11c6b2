import { DrizzleQueryError } from 'drizzle-orm/errors'

/**
 * Why a database call failed, when it was the database's fault rather than the request's:
 * `unavailable` (no connection: refused, lost, the server shutting down or full, no pooled connection
 * within the pool's wait) or `timed-out` (a statement or a lock wait past its time-out, or the
 * request given up). Anything else (a constraint, a bug) is undefined: the caller's to answer.
 */
export type DatabaseFailure = 'unavailable' | 'timed-out'

/** Set on the error that refuses a statement of a request that was given up (lib/request-deadline.ts). */
export const GIVEN_UP = 'REQUEST_GIVEN_UP'

const FROM_DATABASE = Symbol('from the database')

/**
 * Marks an error as the database client's own (a failed connect of the pool): a network error
 * elsewhere (S3, SMTP, the upstream) has the same codes and is not the database's.
 */
export function fromDatabase<E>(error: E): E {
  if (error instanceof Error) Object.defineProperty(error, FROM_DATABASE, { value: true })
  return error
}

/** PostgreSQL's lock_not_available (a lock wait past lock_timeout). */
export const LOCK_TIMEOUT_CODE = '55P03'

// SQLSTATE classes and codes (PostgreSQL's appendix A) that say the server, not the statement, failed.
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '53300', '53400'])
const TIMED_OUT_CODES = new Set(['57014', LOCK_TIMEOUT_CODE, '25P03', GIVEN_UP])
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
])
// node-postgres says these without a code.
const UNAVAILABLE_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'connection error and is not queryable',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
]

/**
 * The failure `error` stands for, when it came from the database: a Drizzle query error (the driver's
 * error in its `cause`), an error of PostgreSQL's own (it has a `severity`), or one marked `fromDatabase`.
 */
export function databaseFailureOf(error: unknown): DatabaseFailure | undefined {
  const fromQuery = error instanceof DrizzleQueryError
  if (!(error instanceof Error) || !(fromQuery || FROM_DATABASE in error || 'severity' in error)) {
    return undefined
  }
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    const code = (current as { code?: unknown }).code
    if (typeof code === 'string') {
      if (TIMED_OUT_CODES.has(code)) return 'timed-out'
      if (UNAVAILABLE_CODES.has(code) || code.startsWith('08') || NETWORK_CODES.has(code))
        return 'unavailable'
    }
    if (current.message === 'Query read timeout') return 'timed-out'
    if (UNAVAILABLE_MESSAGES.some((text) => current instanceof Error && current.message.includes(text)))
      return 'unavailable'
    if (current instanceof AggregateError && current.errors.some((inner) => NETWORK_CODES.has(inner?.code))) {
      return 'unavailable'
    }
    current = current.cause
  }
  return undefined
}

/**
 * Whether `error` is PostgreSQL's unique-key clash (SQLSTATE 23505), on `constraint` when named, on
 * the error or its cause (drizzle wraps the driver's error).
 */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  for (let e: unknown = error; typeof e === 'object' && e !== null; e = (e as { cause?: unknown }).cause) {
    const { code, constraint: clashed } = e as { code?: unknown; constraint?: unknown }
    if (code === '23505' && (constraint === undefined || clashed === constraint)) return true
  }
  return false
}
