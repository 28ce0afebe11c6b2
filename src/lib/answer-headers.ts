import { randomUUID } from 'node:crypto'

/** Header name and value pairs, in the order they are set. */
export type HeaderPairs = readonly (readonly [string, string])[]

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The request's id: X-Request-Id from a proxy when it is sane, otherwise a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID()
}

/**
 * The headers every answer carries, whatever route or lane made it: `X-Content-Type-Options:
 * nosniff`, so no browser runs an answer (a JSON error, an upload served back) as something it is
 * not; and, for an https APP_URL, Strict-Transport-Security, so browsers never reach it over plain
 * http again (a year, as is usual).
 */
export function everyAnswerHeaders(appUrl: string): HeaderPairs {
  const headers: [string, string][] = [['x-content-type-options', 'nosniff']]
  if (appUrl.startsWith('https://')) headers.push(['strict-transport-security', 'max-age=31536000'])
  return Object.freeze(headers)
}
