import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ValidationError } from '../lib/errors.ts'
import { markJsonBody } from '../lib/request-validators.ts'

/**
 * Bodies as Laravel reads them: JSON or form-encoded; an empty or absent body is `{}`, so a
 * missing field is reported as required rather than the whole body as invalid.
 */
const BODILESS = new Set(['GET', 'HEAD'])

async function bodyPlugin(app: FastifyInstance) {
  // Prototype keys are let through the parser and refused below with a 422 naming them, as they
  // are in form and multipart bodies (JSON.parse makes `__proto__` an own key, never the prototype).
  const parseJson = app.getDefaultJsonParser('ignore', 'ignore')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString()
    if (text.trim() === '') return done(null, {})
    parseJson(request, text, (error: Error | null, body?: unknown) => {
      markJsonBody(body)
      done(error, body)
    })
  })
  await app.register(formbody)

  // Before the guards and validation: a reserved key never reaches a handler, an upstream body or a
  // jsonb column, whatever the route does with its body.
  // Callback hooks, as the guards': synchronous work needs no promise per request.
  app.addHook('preValidation', (request: FastifyRequest, _reply, done) => {
    try {
      // No GET or HEAD route takes a body, so theirs skip the route's schema (built anew on each read).
      if (request.body == null && !BODILESS.has(request.method) && request.routeOptions.schema?.body)
        request.body = {}
      else if (request.body != null) request.body = trimStrings(refuseReservedKeys(plainForm(request.body)))
    } catch (error) {
      return done(error as Error)
    }
    done()
  })

  // PostgreSQL cannot store U+0000 in text: refused as a field error rather than a 500 at the query.
  // After the guards and schema validation, so a guest still gets 419/401 and unknown fields are gone.
  // A path parameter holding one names nothing: 404, as a failed route constraint is.
  app.addHook('preHandler', (request: FastifyRequest, _reply, done) => {
    const { params, query, body } = request
    // Most requests carry nothing to walk: they pass without a copy or an array made.
    if (isEmptyObject(params) && isEmptyObject(query) && (body == null || isEmptyObject(body))) return done()
    // Copied: the query and params objects' prototype is neither Object's nor null.
    if (nulFields({ ...(params as object) }).length > 0) {
      // Answered as a failed params schema is (plugins/errors.ts): a 404 naming the route.
      const error = new Error('A path parameter holds a NUL byte.')
      return done(Object.assign(error, { validation: [], validationContext: 'params' }))
    }
    try {
      refuseNulBytes([...nulFields(body), ...nulFields({ ...(query as object) })])
    } catch (error) {
      return done(error as Error)
    }
    done()
  })
}

function refuseNulBytes(withNul: string[]): void {
  if (withNul.length === 0) return
  throw ValidationError.withMessages(
    Object.fromEntries(
      withNul.map((key) => [key, [`The ${key.replaceAll('_', ' ')} field must not contain null bytes.`]]),
    ),
  )
}

/**
 * What the hooks above do to a JSON or form body, for fields a route reads itself (multipart form
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

function refuseReservedKeys<T>(value: T): T {
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
function plainForm(body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body) || isPlainObject(body)) return body
  const proto = Object.getPrototypeOf(body)
  // Spread defines each own key, so even a `__proto__` field stays a field (and is refused next).
  return Object.getPrototypeOf(proto) === null ? { ...body } : body
}

const isEmptyObject = (value: unknown) => {
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

function trimStrings(value: unknown): unknown {
  if (typeof value === 'string') return value.trim()
  for (const { container, key } of stringsIn(value)) {
    const text = (container as Record<string, string>)[key] as string
    // Array items are trimmed whatever the array is called; a password field keeps its spaces.
    if (Array.isArray(container) || !UNTRIMMED.has(key))
      (container as Record<string, string>)[key] = text.trim()
  }
  return value
}

function nulFields(value: unknown): string[] {
  if (typeof value === 'string') return value.includes('\u0000') ? ['body'] : []
  // Most requests have no body, query or path parameters: no walk for those.
  if (value == null || isEmptyObject(value)) return []
  const fields: string[] = []
  for (const { container, key, path } of stringsIn(value)) {
    if (((container as Record<string, string>)[key] as string).includes('\u0000')) fields.push(path)
  }
  return fields
}

export default fp(bodyPlugin, { name: 'body' })
