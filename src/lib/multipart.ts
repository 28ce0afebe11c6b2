import type { MultipartFile } from '@fastify/multipart'
import type { FastifyRequest } from 'fastify'
import { cleanFields, isReservedKey } from './body-fields.ts'
import { HttpError, ValidationError } from './errors.ts'
import type { FieldErrors } from './validation.ts'

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

/**
 * The route's own work on an uploaded file failed (the disk, the bucket), not the upload: a server
 * error, never answered as a broken body.
 */
export class FileWorkFailed extends Error {}

/** What a route takes from a multipart form: which parts are files, which text. */
export interface FormShape {
  /** Whether a part of this name is one of the route's files (`photo`, `attachments[]`). */
  isFile(name: string): boolean
  /** The text fields the route reads; a file under one of these names is refused as Laravel's `string` rule does. */
  text: readonly string[]
}

/**
 * The key Laravel's errors bag uses for a form name: `attachments[]` (the `index`-th of its name)
 * and `attachments[2]` are `attachments.2`.
 */
function errorKey(name: string, index: number): string {
  const bracket = name.indexOf('[')
  if (bracket < 0) return name
  const base = name.slice(0, bracket)
  const inner = name.slice(bracket + 1, name.indexOf(']', bracket))
  return `${base}.${inner === '' ? index : inner}`
}

const fileExpected = (key: string): FieldErrors => ({ [key]: [`The ${key} field must be a file.`] })

/** Errors for text values sent where the shape takes only files, by Laravel's `file` rule. */
export function textWhereFilesGo(fields: Record<string, unknown>, shape: FormShape): FieldErrors {
  const errors: FieldErrors = {}
  for (const [name, value] of Object.entries(fields)) {
    if (!shape.isFile(name)) continue
    // An empty value is an absent one, as Laravel's ConvertEmptyStringsToNull makes it.
    const values = (Array.isArray(value) ? value : [value]).filter((v) => v !== null && v !== '')
    for (let index = 0; index < values.length; index++) {
      // A JSON array names its items by index (`attachments.0`), as a form's `attachments[]` does.
      const key = Array.isArray(value) ? `${name.replace(/\[\d*\]$/, '')}.${index}` : errorKey(name, index)
      Object.assign(errors, fileExpected(key))
    }
  }
  return errors
}

/**
 * Reads a multipart form: each file the shape takes is handed to `onFile` in order (every other
 * file is drained), text fields are collected (a repeated name an array) and cleaned as every
 * body's fields are. A reserved part name, a text value where a file goes or a file where text
 * goes is a 422 naming each, after the whole body is read, so `onFile`'s work can be undone.
 */
export async function readMultipartForm(
  request: FastifyRequest,
  shape: FormShape,
  onFile: (part: MultipartFile) => Promise<void>,
): Promise<Record<string, unknown>> {
  const fields: Record<string, unknown> = {}
  const errors: FieldErrors = {}
  const seen = new Map<string, number>()
  try {
    for await (const part of request.parts()) {
      const name = part.fieldname
      const index = seen.get(name) ?? 0
      seen.set(name, index + 1)
      if (isReservedKey(name)) errors[name] = [`The ${name} field is prohibited.`]
      if (part.type === 'file') {
        if (shape.text.includes(name)) errors[name] = [`The ${name} field must be a string.`]
        if (shape.isFile(name) && !isReservedKey(name)) await onFile(part)
        else part.file.resume()
        continue
      }
      if (shape.isFile(name)) {
        if (part.value !== '') Object.assign(errors, fileExpected(errorKey(name, index)))
        continue
      }
      const earlier = fields[name]
      const value = part.value as string
      fields[name] =
        earlier === undefined ? value : Array.isArray(earlier) ? [...earlier, value] : [earlier, value]
    }
  } catch (error) {
    throw error instanceof HttpError || error instanceof FileWorkFailed ? error : multipartFailure(error)
  }
  if (Object.keys(errors).length > 0) throw new ValidationError(errors)
  return cleanFields(fields)
}
