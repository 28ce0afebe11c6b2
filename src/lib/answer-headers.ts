import { randomUUID } from 'node:crypto'

/** Header name and value pairs, in the order they are set. */
export type HeaderPairs = readonly (readonly [string, string])[]

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The request's id: X-Request-Id from a proxy when it is sane, otherwise a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID()
}

/**
 * Strict-Transport-Security for an https APP_URL: browsers must never reach it over plain http
 * again (a year, as is usual); none otherwise.
 */
export function transportSecurityHeaders(appUrl: string): HeaderPairs {
  return appUrl.startsWith('https://') ? [['strict-transport-security', 'max-age=31536000']] : []
}
