import { type FieldErrors, summarizeErrors } from '../lib/validation.ts'

export interface SimAnswer {
  status: number
  /** undefined means no body (204). */
  body: unknown
}

export interface Context {
  params: Record<string, string>
  query: URLSearchParams
  body: Record<string, unknown>
  rawBody: unknown
  origin: string
  path: string
  userId: string
}

export type Handler = (ctx: Context) => SimAnswer

export const data = (payload: unknown, status = 200): SimAnswer => ({ status, body: { data: payload } })
export const message = (status: number, text: string): SimAnswer => ({ status, body: { message: text } })
export const invalid = (errors: FieldErrors): SimAnswer => ({
  status: 422,
  body: { message: summarizeErrors(errors), errors },
})
// Laravel's ModelNotFoundException text, as a Laravel upstream would answer a foreign or missing id.
export const missing = (model: string, id: string) =>
  message(404, `No query results for model [App\\Models\\${model}] ${id}`)
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
export const positiveId = (text: string | undefined) =>
  text && /^[1-9][0-9]{0,9}$/.test(text) ? Number(text) : null

export const notAnObject = (body: unknown) => body !== undefined && !isObject(body)

/** method, path with `:params`, handler, and whether the path is per user (needs X-User-Id). */
export type RouteEntry = [string, string, Handler, 'shared' | 'user']
