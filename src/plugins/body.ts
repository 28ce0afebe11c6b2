import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ValidationError } from '../lib/errors.ts'

/**
 * Bodies as Laravel reads them: JSON or form-encoded; an empty or absent body is `{}`, so a
 * missing field is reported as required rather than the whole body as invalid.
 */
async function bodyPlugin(app: FastifyInstance) {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body.toString()
    if (text.trim() === '') return done(null, {})
    parseJson(request, text, done)
  })
  await app.register(formbody)

  app.addHook('preValidation', async (request: FastifyRequest) => {
    if (request.body == null && request.routeOptions.schema?.body) request.body = {}
    else request.body = trimStrings(request.body)
  })

  // PostgreSQL cannot store U+0000 in text: refused as a field error rather than a 500 at the query.
  // After the guards and schema validation, so a guest still gets 419/401 and unknown fields are gone.
  // A path parameter holding one names nothing: 404, as a failed route constraint is.
  app.addHook('preHandler', async (request: FastifyRequest) => {
    // Copied: the query and params objects' prototype is neither Object's nor null.
    if (nulFields({ ...(request.params as object) }).length > 0) {
      // Answered as a failed params schema is (plugins/errors.ts): a 404 naming the route.
      throw Object.assign(new Error('A path parameter holds a NUL byte.'), {
        validation: [],
        validationContext: 'params',
      })
    }
    refuseNulBytes([...nulFields(request.body), ...nulFields({ ...(request.query as object) })])
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
 * fields): strings trimmed, a NUL byte a 422 on its field.
 */
export function cleanFields<T>(fields: T): T {
  const cleaned = trimStrings(fields) as T
  refuseNulBytes(nulFields(cleaned))
  return cleaned
}

// Laravel's TrimStrings middleware: input strings are trimmed, passwords are kept as typed.
const UNTRIMMED = new Set(['password', 'password_confirmation', 'current_password'])

// JSON bodies are plain objects; form bodies (querystring.parse) have no prototype at all.
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!value || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

type Container = Record<string, unknown> | unknown[]
const isContainer = (value: unknown): value is Container => Array.isArray(value) || isPlainObject(value)

/**
 * Every string inside `value` with its dotted key, visited with a stack rather than recursion, so a
 * body nested thousands of levels deep cannot exhaust the call stack.
 */
function* stringsIn(value: unknown): Generator<{ container: Container; key: string; path: string }> {
  const stack: { container: Container; path: string }[] = isContainer(value)
    ? [{ container: value, path: '' }]
    : []
  for (let item = stack.pop(); item; item = stack.pop()) {
    const { container, path } = item
    for (const [key, child] of Object.entries(container)) {
      const childPath = path ? `${path}.${key}` : key
      if (typeof child === 'string') yield { container, key, path: childPath }
      else if (isContainer(child)) stack.push({ container: child, path: childPath })
    }
  }
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
  const fields: string[] = []
  for (const { container, key, path } of stringsIn(value)) {
    if (((container as Record<string, string>)[key] as string).includes('\u0000')) fields.push(path)
  }
  return fields
}

export default fp(bodyPlugin, { name: 'body' })
