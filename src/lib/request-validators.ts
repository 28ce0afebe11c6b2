import { Ajv, type ValidateFunction } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'
import { ajvOptions, configureFormats, type FieldErrors, laravelFieldErrors } from './validation.ts'

// The bodies that came as JSON: their values have types of their own, which are checked as sent.
const jsonBodies = new WeakSet<object>()

/** Marks a parsed JSON body, so its fields are checked without coercion (plugins/body.ts). */
export function markJsonBody(body: unknown): void {
  if (body !== null && typeof body === 'object') jsonBodies.add(body)
}

type Validate = ((data: unknown) => boolean) & { errors?: ValidateFunction['errors'] }

/**
 * The route validators. Queries, path parameters, headers and form-encoded bodies are text, so their
 * values are coerced (`"5"` to 5, one value to an array of one), as Laravel's rules read them. A JSON
 * body's values are read only as Laravel reads JSON (laravelJsonValues): a number, a boolean, an
 * array or an object where the schema wants a string, a string where it wants an array, an object or
 * a boolean, or `false` for a number, is a 422 before anything happens, never "12345" or the first
 * item of an array.
 */
export function requestValidators(): () => FastifySchemaCompiler<unknown> {
  return () => {
    const coercing = configureFormats(new Ajv(ajvOptions))
    const exact = configureFormats(new Ajv({ ...ajvOptions, coerceTypes: false }))
    return ({ schema, httpPart }) => {
      if (httpPart !== 'body') return coercing.compile(schema as object)
      const asJson = exact.compile(schema as object)
      // Form bodies are rare: their validator is made on the first one.
      let asText: ValidateFunction | undefined
      const validate: Validate = (data) => {
        const json = data !== null && typeof data === 'object' && jsonBodies.has(data)
        if (json) laravelJsonValues(schema as JsonSchema, data)
        let check = asJson
        if (!json) {
          asText ??= coercing.compile(schema as object)
          check = asText
        }
        const valid = check(data)
        validate.errors = check.errors
        return valid
      }
      return validate
    }
  }
}

/**
 * A body schema checked as the route validators check it (a JSON body's values as sent, form and
 * multipart text coerced), for routes that read their body themselves: Laravel-style field errors,
 * {} when valid.
 */
export function compileBodyValidator(schema: object): (body: unknown) => FieldErrors {
  const validate = requestValidators()()({ schema, httpPart: 'body', method: 'POST', url: '' }) as Validate
  return (body) => (validate(body) ? {} : laravelFieldErrors(validate.errors ?? []))
}

type JsonSchema = {
  type?: unknown
  anyOf?: JsonSchema[]
  properties?: Record<string, JsonSchema>
  items?: JsonSchema
}

const typesOf = (schema: JsonSchema): string[] => [
  ...(Array.isArray(schema.type) ? schema.type : typeof schema.type === 'string' ? [schema.type] : []),
  ...(schema.anyOf ?? []).flatMap(typesOf),
]

// A number as Laravel's `numeric` rule reads a string: decimal, optional sign, fraction, exponent.
const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/
const BOOLEAN_TEXT = new Map<unknown, boolean>([
  [1, true],
  [0, false],
  ['1', true],
  ['0', false],
])

/** What Laravel makes of one JSON value for a field of these types, or the value unchanged. */
function laravelValue(types: string[], value: unknown): unknown {
  // ConvertEmptyStringsToNull, where the field takes null (a cleared time zone).
  if (value === '' && types.includes('null')) return null
  if (types.includes('string')) return value
  // `numeric` and `integer` take a number written as text.
  if (
    typeof value === 'string' &&
    (types.includes('number') || types.includes('integer')) &&
    NUMERIC.test(value)
  )
    return Number(value)
  // `boolean` takes 1, 0, "1" and "0".
  if (types.includes('boolean') && BOOLEAN_TEXT.has(value)) return BOOLEAN_TEXT.get(value)
  return value
}

/**
 * A JSON body's values as Laravel's middleware and rules read them, and no further: `""` is null
 * where the field takes null; a numeric string is its number and 1, 0, "1" or "0" a boolean where
 * the field takes no string. Everything else is checked as sent.
 */
export function laravelJsonValues(schema: JsonSchema, value: unknown, depth = 0): void {
  // Schemas nest a few levels; what lies deeper than any schema is not walked.
  if (depth > 32 || value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    if (!schema.items) return
    const types = typesOf(schema.items)
    value.forEach((item, i) => {
      value[i] = laravelValue(types, item)
      laravelJsonValues(schema.items as JsonSchema, value[i], depth + 1)
    })
    return
  }
  const record = value as Record<string, unknown>
  for (const [key, field] of Object.entries(schema.properties ?? {})) {
    if (!Object.hasOwn(record, key)) continue
    record[key] = laravelValue(typesOf(field), record[key])
    laravelJsonValues(field, record[key], depth + 1)
  }
}
