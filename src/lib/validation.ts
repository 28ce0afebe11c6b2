import { Ajv, type ErrorObject, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { TSchema } from 'typebox'
import { isCountryCode, isTimeZone } from './locale.ts'

export type FieldErrors = Record<string, string[]>

/** Ajv settings shared by Fastify's route validation and by validators compiled here (CLI, config). */
export const ajvOptions: Options = {
  coerceTypes: 'array',
  removeAdditional: 'all',
  useDefaults: true,
  allErrors: true,
  // Errors carry the value, so an empty string can be reported as missing, as Laravel's `required` does.
  verbose: true,
}

export function configureFormats(ajv: Ajv): Ajv {
  addFormats.default(ajv, ['email', 'uri', 'date-time', 'date', 'uuid', 'ipv4', 'ipv6'])
  ajv.addFormat('timezone', { type: 'string', validate: isTimeZone })
  ajv.addFormat('country-code', { type: 'string', validate: isCountryCode })
  return ajv
}

const ajv = configureFormats(new Ajv(ajvOptions))

/** Compiles a schema into a function answering Laravel-style field errors ({} when valid); may coerce in place. */
export function compileValidator(schema: TSchema): (value: unknown) => FieldErrors {
  const check = ajv.compile(schema)
  return (value) => (check(value) ? {} : laravelFieldErrors(check.errors ?? []))
}

// Laravel's validation attribute: str_replace('_', ' ', Str::snake($key)).
function attributeName(key: string): string {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replaceAll('_', ' ')
}

function pointerToKey(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .join('.')
}

const typeMessages: Record<string, string> = {
  string: 'must be a string.',
  integer: 'must be an integer.',
  number: 'must be a number.',
  boolean: 'must be true or false.',
  object: 'must be an object.',
  array: 'must be an array.',
  null: 'must be null.',
}

const formatMessages: Record<string, string> = {
  email: 'must be a valid email address.',
  uri: 'must be a valid URL.',
  'date-time': 'must be a valid date.',
  date: 'must be a valid date.',
  uuid: 'must be a valid UUID.',
  timezone: 'must be a valid timezone.',
  'country-code': 'must be a valid ISO 3166-1 alpha-2 country code.',
}

function messageFor(error: ErrorObject, attribute: string): string {
  const field = `The ${attribute} field`
  const p = error.params as Record<string, unknown>
  switch (error.keyword) {
    case 'required':
      return `${field} is required.`
    case 'type': {
      // JSON null reads as empty, as Laravel's ConvertEmptyStringsToNull makes "" and null one thing.
      if (error.data === null) return `${field} is required.`
      const type = String(p.type).split(',')[0] ?? ''
      return `${field} ${typeMessages[type] ?? 'has the wrong type.'}`
    }
    case 'format':
      return `${field} ${formatMessages[String(p.format)] ?? 'format is invalid.'}`
    case 'pattern':
      return `${field} format is invalid.`
    case 'minLength':
      // Laravel's `required` rejects an empty string before any length rule runs.
      if (error.data === '') return `${field} is required.`
      return `${field} must be at least ${p.limit} characters.`
    case 'maxLength':
      return `${field} must not be greater than ${p.limit} characters.`
    case 'minimum':
      return `${field} must be at least ${p.limit}.`
    case 'maximum':
      return `${field} must not be greater than ${p.limit}.`
    case 'exclusiveMinimum':
      return `${field} must be greater than ${p.limit}.`
    case 'exclusiveMaximum':
      return `${field} must be less than ${p.limit}.`
    case 'minItems':
      return `${field} must have at least ${p.limit} items.`
    case 'maxItems':
      return `${field} must not have more than ${p.limit} items.`
    case 'minProperties':
      return `${field} must have at least ${p.limit} entries.`
    case 'maxProperties':
      return `${field} must not have more than ${p.limit} entries.`
    case 'enum':
    case 'const':
      return `The selected ${attribute} is invalid.`
    case 'additionalProperties':
      return `${field} is prohibited.`
    default:
      return `${field} is invalid.`
  }
}

/**
 * Ajv errors -> Laravel's `errors` bag: dotted keys (`items.0.name`), one message per rule, in order.
 * `rootKey` names a value that failed as a whole (a JSON body that is not an object, say).
 */
export function laravelFieldErrors(errors: ErrorObject[], rootKey = 'body'): FieldErrors {
  const bag: FieldErrors = {}
  // A union reports every branch; the union's own error is the one a person can act on.
  const inUnion = (e: ErrorObject) => /\/(anyOf|oneOf)\/\d+/.test(e.schemaPath)
  // A nullable field (`T | null`) is the exception: T's own errors say what is wrong, as Laravel's
  // `nullable` rules do ("must be a valid timezone", not "is invalid").
  const isNullBranch = (e: ErrorObject) =>
    inUnion(e) && e.keyword === 'type' && (e.params as { type?: unknown }).type === 'null'
  const nullableUnions = errors.filter(isNullBranch).map((e) => e.schemaPath.replace(/\/\d+\/type$/, ''))
  const inNullableUnion = (e: ErrorObject) =>
    nullableUnions.some((path) => e.schemaPath.startsWith(`${path}/`))
  for (const error of errors) {
    if (isNullBranch(error) || nullableUnions.includes(error.schemaPath)) continue
    if (inUnion(error) && !inNullableUnion(error) && errors.some((e) => e !== error && !inUnion(e))) continue
    let key = pointerToKey(error.instancePath)
    const p = error.params as Record<string, unknown>
    if (error.keyword === 'required') key = key ? `${key}.${p.missingProperty}` : String(p.missingProperty)
    if (error.keyword === 'additionalProperties')
      key = key ? `${key}.${p.additionalProperty}` : String(p.additionalProperty)
    if (!key) key = rootKey
    const message = messageFor(error, attributeName(key))
    const list = bag[key] ?? []
    if (!list.includes(message)) list.push(message)
    bag[key] = list
  }
  // Laravel runs no other rule on an empty value ("required" only, never also "must be a valid email").
  for (const [key, list] of Object.entries(bag)) {
    const required = `The ${attributeName(key)} field is required.`
    if (list.includes(required)) bag[key] = [required]
  }
  return bag
}

/** Laravel's ValidationException::summarize: the first message and how many more there are. */
export function summarizeErrors(errors: FieldErrors): string {
  const messages = Object.values(errors).flat()
  const [first] = messages
  if (first === undefined) return 'The given data was invalid.'
  const more = messages.length - 1
  return more === 0 ? first : `${first} (and ${more} more ${more === 1 ? 'error' : 'errors'})`
}

/**
 * A body field as validation will see it, for code that runs before validation (throttle keys):
 * a string, or a number or boolean as Ajv's coercion turns it into one, or a one-item array of
 * those (coerceTypes: 'array'); anything else (an object, say `{"toString": 1}`) is '', so the
 * request goes on to its 422 instead of failing where the key is built.
 */
export function bodyText(body: unknown, field: string): string {
  if (!body || typeof body !== 'object' || !Object.hasOwn(body, field)) return ''
  let value = (body as Record<string, unknown>)[field]
  if (Array.isArray(value) && value.length === 1) value = value[0]
  if (typeof value === 'string') return value
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : ''
}
