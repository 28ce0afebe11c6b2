import { ValidationError } from './errors.ts'

/**
 * What every body's fields go through, whatever their kind (JSON, form, multipart): a reserved key
 * is a 422, strings are trimmed, a NUL byte is a 422 on its field. plugins/body.ts applies it to the
 * bodies Fastify parses; routes that read a multipart stream themselves apply `cleanFields`.
 */

export function refuseNulBytes(withNul: string[]): void {
  if (withNul.length === 0) return
  throw ValidationError.withMessages(
    Object.fromEntries(
      withNul.map((key) => [key, [`The ${key.replaceAll('_', ' ')} field must not contain null bytes.`]]),
    ),
  )
}

/**
 * What plugins/body.ts does to a JSON or form body, for fields a route reads itself (multipart form
 * fields): a reserved key a 422, strings trimmed, a NUL byte a 422 on its field.
 */
export function cleanFields<T>(fields: T): T {
  const cleaned = trimStrings(refuseReservedKeys(fields)) as T
  refuseNulBytes(nulFields(cleaned))
  return cleaned
}

/**
 * Keys that reach Object.prototype through an assignment or a merge (`target[key] = value`), and
 * that no field of this API is named: refused at any depth, in every kind of body.
 */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype'])
// Enough to say what is wrong; a body made of nothing else does not get an answer as large.
const MAX_RESERVED_REPORTED = 10

/** Whether a field name is one no body may carry (a multipart part's name, say). */
export const isReservedKey = (key: string) => RESERVED_KEYS.has(key)

export function refuseReservedKeys<T>(value: T): T {
  const found: string[] = []
  for (const { key, path } of entriesIn(value)) {
    // Only the outermost: what a refused key holds is not looked at (`constructor.prototype`).
    if (!RESERVED_KEYS.has(key) || found.some((outer) => path.startsWith(`${outer}.`))) continue
    found.push(path)
    if (found.length === MAX_RESERVED_REPORTED) break
  }
  if (found.length === 0) return value
  // fromEntries defines each key, so `__proto__` is a field of the bag, not its prototype.
  throw ValidationError.withMessages(
    Object.fromEntries(found.map((path) => [path, [`The ${path} field is prohibited.`]])),
  )
}

// Laravel's TrimStrings middleware: input strings are trimmed, passwords are kept as typed.
const UNTRIMMED = new Set(['password', 'password_confirmation', 'current_password'])

// JSON bodies are plain objects; form bodies (fast-querystring) inherit from a prototype-less object.
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!value || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * A form body as a plain object, as a JSON body is: the parser's objects lack Object.prototype's
 * methods, which code handed a body may call (`String(body)`, `body.hasOwnProperty`).
 */
export function plainForm(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body) || isPlainObject(body)) return body
  const proto = Object.getPrototypeOf(body)
  // Spread defines each own key, so even a `__proto__` field stays a field (and is refused next).
  return Object.getPrototypeOf(proto) === null ? { ...body } : body
}

export const isEmptyObject = (value: unknown) => {
  if (typeof value !== 'object' || value === null) return false
  for (const _key in value) return false
  return true
}

type Container = Record<string, unknown> | unknown[]
const isContainer = (value: unknown): value is Container => Array.isArray(value) || isPlainObject(value)

/**
 * Every member inside `value` with its dotted key, visited with a stack rather than recursion, so a
 * body nested thousands of levels deep cannot exhaust the call stack.
 */
function* entriesIn(
  value: unknown,
): Generator<{ container: Container; key: string; path: string; child: unknown }> {
  const stack: { container: Container; path: string }[] = isContainer(value)
    ? [{ container: value, path: '' }]
    : []
  for (let item = stack.pop(); item; item = stack.pop()) {
    const { container, path } = item
    for (const [key, child] of Object.entries(container)) {
      const childPath = path ? `${path}.${key}` : key
      yield { container, key, path: childPath, child }
      if (isContainer(child)) stack.push({ container: child, path: childPath })
    }
  }
}

function* stringsIn(value: unknown): Generator<{ container: Container; key: string; path: string }> {
  for (const entry of entriesIn(value)) if (typeof entry.child === 'string') yield entry
}

export function trimStrings(value: unknown): unknown {
  if (typeof value === 'string') return value.trim()
  for (const { container, key } of stringsIn(value)) {
    const text = (container as Record<string, string>)[key] as string
    // Array items are trimmed whatever the array is called; a password field keeps its spaces.
    if (Array.isArray(container) || !UNTRIMMED.has(key))
      (container as Record<string, string>)[key] = text.trim()
  }
  return value
}

export function nulFields(value: unknown): string[] {
  if (typeof value === 'string') return value.includes('\u0000') ? ['body'] : []
  // Most requests have no body, query or path parameters: no walk for those.
  if (value == null || isEmptyObject(value)) return []
  const fields: string[] = []
  for (const { container, key, path } of stringsIn(value)) {
    if (((container as Record<string, string>)[key] as string).includes('\u0000')) fields.push(path)
  }
  return fields
}
