import { randomBytes, randomUUID } from 'node:crypto'
import { dereference } from '@readme/openapi-parser'
import { Ajv, type ValidateFunction } from 'ajv'
import { laravelJsonValues } from '../../src/lib/request-validators.ts'
import { ajvOptions, configureFormats } from '../../src/lib/validation.ts'
import type { TestApp } from './build-test-app.ts'
import type { ClientResponse, TestClient } from './client.ts'
import { signedInClient } from './factories.ts'
import { type FormPair, type FormPairs, formEncoded, multipartForm, type RawBody, TINY_PNG } from './forms.ts'
import { fillOpenApiPath } from './routes.ts'

/**
 * A generic bad-input walker: reads the OpenAPI document, derives malformed requests from each
 * operation's body, query and path schemas, sends them as a signed-in admin with a valid CSRF token
 * (so only validation stands in the way), and reports every answer that breaks the error contract.
 */

export type JsonSchema = Record<string, any>

export interface Parameter {
  name: string
  required: boolean
  schema: JsonSchema
}

export interface Operation {
  /** `POST /api/register`, as the document names it. */
  id: string
  method: string
  path: string
  /** The JSON body's schema. */
  body: JsonSchema | null
  /** The form's schema: the multipart form's where the document names one, else the JSON body's. */
  form: JsonSchema | null
  /** Whether the document lists multipart/form-data: the route reads such a body (others answer 415). */
  takesMultipart: boolean
  query: Parameter[]
  params: Parameter[]
}

export type CaseKind =
  | 'wrong-type'
  | 'missing'
  | 'oversized'
  | 'nul'
  | 'body'
  | 'query'
  | 'path'
  /** The body form-encoded, as an HTML form posts it. */
  | 'form'
  /** The body as multipart/form-data, as FormData sends it. */
  | 'multipart'

export interface BadInputCase {
  operation: string
  kind: CaseKind
  label: string
  method: string
  url: string
  /** Sent JSON-encoded (`null` included); undefined sends no body. */
  json?: unknown
  raw?: RawBody
  /** The schemas (or the HTTP layer) must refuse it, so the answer has to be a 4xx. */
  invalid: boolean
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch']

/** The operations of a document that take input: a JSON or form body, query or path parameters. */
export async function operationsWithInput(document: unknown): Promise<Operation[]> {
  const doc = (await dereference(structuredClone(document) as any)) as any
  const operations: Operation[] = []
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method]
      if (!operation) continue
      const parameters: any[] = [...(item.parameters ?? []), ...(operation.parameters ?? [])]
      const pick = (where: string): Parameter[] =>
        parameters
          .filter((p) => p.in === where)
          .map((p) => ({ name: p.name, required: p.required === true, schema: p.schema ?? {} }))
      const content = operation.requestBody?.content ?? {}
      const body = content['application/json']?.schema ?? null
      const multipart = content['multipart/form-data']?.schema ?? null
      const op: Operation = {
        id: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        body,
        form: multipart ?? content['application/x-www-form-urlencoded']?.schema ?? body,
        takesMultipart: multipart !== null,
        query: pick('query'),
        params: pick('path'),
      }
      if (op.body || op.form || op.query.length > 0 || op.params.length > 0) operations.push(op)
    }
  }
  return operations
}

// ---------------------------------------------------------------------------------------------
// Schemas: sampling a valid value, finding fields, classifying a value as the app's Ajv would.

function classifier(): Ajv {
  // The app's own Ajv settings (coercion, defaults, stripping unknown fields), so "invalid" here
  // means exactly what the route's validation will refuse: queries, paths and forms are text.
  return configureFormats(new Ajv({ ...ajvOptions, strict: false }))
}

/** What the route's validation refuses of a JSON body: its values checked as sent, without coercion. */
function jsonBodyClassifier(schema: JsonSchema): (body: unknown) => boolean {
  const check = configureFormats(new Ajv({ ...ajvOptions, coerceTypes: false, strict: false })).compile(
    schema,
  )
  // Judged in place, as the route does: callers hand over a copy (or a body parsed just for this).
  return (body) => {
    laravelJsonValues(schema, body)
    return check(body) === true
  }
}

const objectShape = (schema: JsonSchema | undefined): JsonSchema | undefined => {
  if (!schema || typeof schema !== 'object') return undefined
  if (schema.properties) return schema
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) {
    const found = objectShape(branch)
    if (found) return found
  }
  return undefined
}

const arrayItems = (schema: JsonSchema | undefined): JsonSchema | undefined => {
  if (!schema || typeof schema !== 'object') return undefined
  if (schema.items && typeof schema.items === 'object') return schema.items
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    const found = arrayItems(branch)
    if (found) return found
  }
  return undefined
}

/** A file in a form: a string of some media type's bytes (OpenAPI 3.1's `contentMediaType`). */
const isFileSchema = (schema: JsonSchema | undefined) =>
  !!schema &&
  typeof schema === 'object' &&
  (schema.contentMediaType !== undefined || schema.format === 'binary')

/** Whether a form field is a file, a list of files (`attachments[]`), or neither. */
const fileKind = (schema: JsonSchema): 'one' | 'many' | null =>
  isFileSchema(schema) ? 'one' : isFileSchema(arrayItems(schema)) ? 'many' : null

/** The JSON types a schema allows (integer counted as number), for picking oversized values. */
function typesOf(schema: JsonSchema | undefined): Set<string> {
  const types = new Set<string>()
  if (!schema || typeof schema !== 'object') return types
  const declared = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []
  for (const type of declared) types.add(type === 'integer' ? 'number' : type)
  if (schema.properties) types.add('object')
  if (schema.items) types.add('array')
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) {
    for (const type of typesOf(branch)) types.add(type)
  }
  return types
}

const hex = () => randomBytes(4).toString('hex')

function sampleString(schema: JsonSchema): string {
  switch (schema.format) {
    case 'email':
      return `walker-${hex()}@example.com`
    case 'date-time':
      return new Date().toISOString()
    case 'date':
      return new Date().toISOString().slice(0, 10)
    case 'uuid':
      return randomUUID()
    case 'uri':
    case 'url':
      return `https://example.com/walker-${hex()}`
    case 'ipv4':
      return '127.0.0.1'
    case 'ipv6':
      return '::1'
  }
  let value = `walker-${hex()}`
  while (value.length < (schema.minLength ?? 0)) value += 'x'
  return schema.maxLength === undefined ? value : value.slice(0, schema.maxLength)
}

function sampleNumber(schema: JsonSchema, integer: boolean): number {
  let value = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1)
  if (schema.maximum !== undefined) value = Math.min(value, schema.maximum)
  if (schema.exclusiveMaximum !== undefined) value = Math.min(value, schema.exclusiveMaximum - 1)
  if (schema.multipleOf) value = Math.ceil(value / schema.multipleOf) * schema.multipleOf
  return integer ? Math.ceil(value) : value
}

/** A value the schema accepts, as far as can be guessed: required properties only, smallest sizes. */
export function sample(schema: JsonSchema | undefined): unknown {
  if (!schema || typeof schema !== 'object') return 'walker'
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  if (schema.default !== undefined) return structuredClone(schema.default)
  const branches: JsonSchema[] | undefined = schema.anyOf ?? schema.oneOf
  if (branches) return sample(branches.find((b) => b.type !== 'null') ?? branches[0])
  if (schema.allOf) {
    const parts = schema.allOf.map(sample)
    return parts.every((p: unknown) => p && typeof p === 'object' && !Array.isArray(p))
      ? Object.assign({}, ...parts)
      : parts[0]
  }
  const declared: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []
  const type =
    declared.find((t) => t !== 'null') ??
    (schema.properties ? 'object' : schema.items ? 'array' : (declared[0] ?? 'string'))
  switch (type) {
    case 'null':
      return null
    case 'boolean':
      return true
    case 'integer':
      return sampleNumber(schema, true)
    case 'number':
      return sampleNumber(schema, false)
    case 'array': {
      const count = Math.min(Math.max(schema.minItems ?? 1, 1), schema.maxItems ?? Number.POSITIVE_INFINITY)
      return Array.from({ length: count }, () => sample(schema.items))
    }
    case 'object': {
      const out: Record<string, unknown> = {}
      for (const key of schema.required ?? []) {
        out[key] = sample(schema.properties?.[key] ?? schema.additionalProperties)
      }
      return out
    }
    default:
      return sampleString(schema)
  }
}

type Path = (string | number)[]

interface Field {
  path: Path
  schema: JsonSchema
  required: boolean
}

/** Every property of a body schema, nested objects and the first item of arrays of objects included. */
function fieldsOf(schema: JsonSchema | undefined, prefix: Path = [], depth = 0): Field[] {
  const shape = objectShape(schema)
  if (!shape || depth > 4) return []
  const fields: Field[] = []
  for (const [name, sub] of Object.entries<JsonSchema>(shape.properties)) {
    const path = [...prefix, name]
    fields.push({ path, schema: sub, required: (shape.required ?? []).includes(name) })
    fields.push(...fieldsOf(sub, path, depth + 1))
    const items = arrayItems(sub)
    if (items) fields.push(...fieldsOf(items, [...path, 0], depth + 1))
  }
  return fields
}

function schemaAt(schema: JsonSchema, path: Path): JsonSchema | undefined {
  let current: JsonSchema | undefined = schema
  for (const segment of path) {
    current = typeof segment === 'number' ? arrayItems(current) : objectShape(current)?.properties?.[segment]
  }
  return current
}

/** A copy of `root` with `path` set to `value` (or removed), creating missing parents from the schema. */
function withField(root: unknown, schema: JsonSchema, path: Path, value: unknown, remove = false): unknown {
  const copy = structuredClone(root) as any
  let container = copy
  for (let i = 0; i < path.length - 1; i++) {
    const segment = path[i] as string | number
    const next = container[segment]
    if (next === null || typeof next !== 'object') {
      const made = sample(schemaAt(schema, path.slice(0, i + 1)))
      container[segment] =
        made !== null && typeof made === 'object' ? made : typeof path[i + 1] === 'number' ? [] : {}
    }
    container = container[segment]
  }
  const last = path[path.length - 1] as string | number
  if (remove) delete container[last]
  else container[last] = value
  return copy
}

const fieldName = (path: Path) => path.join('.')

// Too deep for JSON.stringify or structuredClone (both recurse), so deep values travel as text:
// a placeholder in the body is swapped for the nested JSON just before sending.
const DEEP = '\u0001nested-10000-deep\u0001'
const DEEP_JSON = `${'{"a":'.repeat(10_000)}{"leaf":true}${'}'.repeat(10_000)}`
const jsonText = (value: unknown) => JSON.stringify(value).replace(JSON.stringify(DEEP), DEEP_JSON)

// Values of the wrong JSON type, and strings standing for other types; the classifier keeps those the
// schema refuses (JSON values are checked as sent: a number is no string, "42" no number).
const WRONG_TYPES: [string, unknown][] = [
  ['a number', 12345],
  ['a fraction', 1.5],
  ['a boolean', true],
  ['a word', 'not-a-valid-value'],
  ['a numeric string', '42'],
  ['the string "true"', 'true'],
  ['an object', { unexpected: 'object' }],
  ['an empty object', {}],
  ['an array', [1, 'two', { three: 3 }]],
  ['an array of one', ['one']],
  ['an empty array', []],
  ['null', null],
]

function oversizedValues(schema: JsonSchema): [string, unknown][] {
  const types = typesOf(schema)
  const values: [string, unknown][] = []
  if (types.size === 0 || types.has('string')) values.push(['100k characters', 'x'.repeat(100_000)])
  if (types.size === 0 || types.has('number')) values.push(['1e308', 1e308], ['-1e308', -1e308])
  if (types.size === 0 || types.has('array')) {
    values.push(['10k items', Array.from({ length: 10_000 }, () => sample(arrayItems(schema)))])
  }
  if (types.size === 0 || types.has('object')) values.push(['nested 10000 deep', DEEP])
  return values
}

// Query values as raw (already URL-encoded) text.
const QUERY_VALUES: [string, string][] = [
  ['a word', 'abc'],
  ['a fraction', '1.5'],
  ['a negative number', '-1'],
  ['empty', ''],
  ['1e308', '1e308'],
  ['-1e308', '-1e308'],
  ['40 digits', '9'.repeat(40)],
  ['4000 characters', 'x'.repeat(4000)],
  ['a NUL byte', '%00'],
  ['bad percent-encoding', '%FF'],
]

// Path segments as raw URL text. A NUL byte or undecodable text can never name a resource.
const PATH_VALUES: [string, string, boolean][] = [
  ['a word', 'abc', false],
  ['zero', '0', false],
  ['a negative number', '-1', false],
  ['a fraction', '1.5', false],
  ['1e308', '1e308', false],
  ['40 digits', '9'.repeat(40), false],
  ['5000 characters', 'a'.repeat(5000), false],
  ['an encoded slash', '..%2F..%2Fetc', false],
  ['a NUL byte', '%00', true],
  ['bad percent-encoding', '%FF', true],
]

function objectSchemaOf(parameters: Parameter[]): JsonSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(parameters.map((p) => [p.name, p.schema])),
    required: parameters.filter((p) => p.required).map((p) => p.name),
  }
}

function plainPathValue(schema: JsonSchema): string {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  const plainString = (type === undefined || type === 'string') && !schema.format && !schema.enum
  return plainString && !schema.pattern ? '1' : String(sample(schema))
}

function parseQuery(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const [key, value] of new URLSearchParams(query)) {
    const seen = out[key]
    out[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return out
}

function accepts(check: ValidateFunction, value: unknown): boolean {
  return check(structuredClone(value)) === true
}

// Form values as text: what a form can say instead of a valid value.
const FORM_VALUES: [string, string][] = [
  ['a word', 'not-a-valid-value'],
  ['a numeric string', '42'],
  ['a fraction', '1.5'],
  ['a negative number', '-1'],
  ['the string "true"', 'true'],
  ['empty', ''],
  ['1e308', '1e308'],
  ['100k characters', 'x'.repeat(100_000)],
]

// Keys that reach Object.prototype through a careless assignment or merge; refused in every body.
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'] as const

// `String(value)` throws on it: neither toString nor valueOf is a function.
const CRAFTED_OBJECT = { toString: 1, valueOf: 1 }
const CRAFTED_LABEL = 'an object whose toString is no function'

/** A JSON value as form fields, the way PHP's forms nest them (`a[b]=1`, `list[0]=x`). */
function formPairs(value: unknown, prefix = ''): [string, string][] {
  if (value === null || value === undefined) return prefix ? [[prefix, '']] : []
  if (typeof value !== 'object') return prefix ? [[prefix, String(value)]] : []
  const entries = Array.isArray(value)
    ? value.map((item, i) => [String(i), item] as const)
    : Object.entries(value)
  return entries.flatMap(([key, child]) => formPairs(child, prefix ? `${prefix}[${key}]` : key))
}

/** Form fields as the server reads them: strings, a repeated name an array of them. */
function parseForm(pairs: FormPairs): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const [key, content] of pairs) {
    const value = content.toString()
    const seen = Object.hasOwn(out, key) ? out[key] : undefined
    const next = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
    Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true })
  }
  return out
}

/** Every malformed request derived from one operation's schemas. */
export function badInputCases(op: Operation): BadInputCase[] {
  const ajv = classifier()
  const bodyCheck = op.body ? ajv.compile(op.body) : null
  const jsonBodyAccepted = op.body ? jsonBodyClassifier(op.body) : () => true
  const queryCheck = ajv.compile(objectSchemaOf(op.query))
  const paramsCheck = ajv.compile(objectSchemaOf(op.params))

  const baseParams = Object.fromEntries(op.params.map((p) => [p.name, plainPathValue(p.schema)]))
  const baseQuery: [string, string][] = op.query
    .filter((p) => p.required)
    .map((p) => [p.name, encodeURIComponent(String(sample(p.schema)))])
  const queryText = (pairs: [string, string][]) => pairs.map(([k, v]) => `${k}=${v}`).join('&')
  const urlOf = (params: Record<string, string>, pairs: [string, string][]) => {
    const qs = queryText(pairs)
    return fillOpenApiPath(op.path, params) + (qs ? `?${qs}` : '')
  }
  const baseUrl = urlOf(baseParams, baseQuery)
  // A fresh body per case: unique emails and names keep per-email throttles apart.
  const baseBody = () => (op.body ? sample(op.body) : undefined)

  const cases: BadInputCase[] = []
  const add = (kind: CaseKind, label: string, invalid: boolean, request: Partial<BadInputCase>) =>
    cases.push({ operation: op.id, kind, label, method: op.method, url: baseUrl, invalid, ...request })

  if (op.body && bodyCheck) {
    const schema = op.body
    const bodyInvalid = (json: unknown) => !jsonBodyAccepted(structuredClone(json ?? {}))
    // A body with the deep placeholder goes as raw JSON text, and is judged as parsed from it.
    const addBody = (kind: CaseKind, label: string, json: unknown) => {
      const text = jsonText(json)
      if (text === JSON.stringify(json)) return add(kind, label, bodyInvalid(json), { json })
      add(kind, label, !jsonBodyAccepted(JSON.parse(text)), {
        raw: { payload: text, contentType: 'application/json' },
      })
    }
    const fields = fieldsOf(schema)
    for (const field of fields) {
      const name = fieldName(field.path)
      const wrapped: [string, unknown] = ['an array holding a valid value', [sample(field.schema)]]
      for (const [label, value] of [...WRONG_TYPES, wrapped]) {
        const json = withField(baseBody(), schema, field.path, value)
        if (bodyInvalid(json)) add('wrong-type', `${name} = ${label}`, true, { json })
      }
      // Whether or not the schema takes an object here, code that reads the body before validation
      // (throttle keys) or after it (free JSON) must not try to make a string of it.
      const crafted = withField(baseBody(), schema, field.path, CRAFTED_OBJECT)
      add('wrong-type', `${name} = ${CRAFTED_LABEL}`, bodyInvalid(crafted), { json: crafted })
      if (field.required) {
        const json = withField(baseBody(), schema, field.path, undefined, true)
        add('missing', `${name} left out`, bodyInvalid(json), { json })
      }
      for (const [label, value] of oversizedValues(field.schema)) {
        addBody('oversized', `${name} = ${label}`, withField(baseBody(), schema, field.path, value))
      }
      if (typesOf(field.schema).has('string') || typesOf(field.schema).size === 0) {
        const json = withField(baseBody(), schema, field.path, `walker\u0000${hex()}`)
        add('nul', `${name} with a NUL byte`, bodyInvalid(json), { json })
      }
    }
    for (const [label, json] of [
      ['an array', []],
      ['a string', 'text'],
      ['a number', 42],
      ['true', true],
      ['null', null],
    ] as [string, unknown][]) {
      add('body', `the body is ${label}`, bodyInvalid(json), { json })
    }
    add('body', 'the body is malformed JSON', true, {
      raw: { payload: '{"broken": ', contentType: 'application/json' },
    })
    for (const key of PROTOTYPE_KEYS) {
      // Beside an otherwise valid body, so nothing but the key is wrong with it.
      const members = JSON.stringify(baseBody() ?? {}).slice(1)
      const sample = members.startsWith('"') ? `,${members}` : '}'
      add('body', `the body carries ${key}`, true, {
        raw: { payload: `{"${key}": {"is_admin": true}${sample}`, contentType: 'application/json' },
      })
    }
    add('body', 'the body carries constructor.prototype', true, {
      raw: { payload: '{"constructor": {"prototype": {"is_admin": true}}}', contentType: 'application/json' },
    })
    add('body', 'the body is XML', true, {
      raw: { payload: '<user><name>x</name></user>', contentType: 'application/xml' },
    })
    add('body', 'the body is over 1 MiB', true, {
      json: { ...(baseBody() as object), padding: 'x'.repeat(1024 * 1024 + 1) },
    })
    addBody('oversized', 'an unknown field nested 10000 deep', {
      ...(baseBody() as object),
      walker_extra: DEEP,
    })
  }

  if (op.form) {
    // The same operation as an HTML form and as FormData would send it: every value text, files as
    // files. A route that takes no multipart answers 415 to any: the body and the reserved names show it.
    const formSchema = op.form
    const formCheck = ajv.compile(formSchema)
    const pairsInvalid = (pairs: FormPairs) => !accepts(formCheck, parseForm(pairs))
    const shape = objectShape(formSchema)
    const topLevel = shape?.properties ?? {}
    const files = new Map<string, 'one' | 'many'>()
    for (const [name, sub] of Object.entries<JsonSchema>(topLevel)) {
      const kind = fileKind(sub)
      if (kind) files.set(name, kind)
    }
    const topName = (key: string) => key.replace(/\[.*$/, '')
    const basePairs: FormPair[] = formPairs(sample(formSchema)).map(([key, value]) =>
      files.has(topName(key)) ? [key, TINY_PNG, 'walker.png'] : [key, value],
    )
    const encodings: [CaseKind, (pairs: FormPairs) => RawBody][] = [
      ['form', formEncoded],
      ['multipart', multipartForm],
    ]
    for (const [kind, encode] of encodings) {
      const send = (label: string, pairs: FormPairs, invalid = pairsInvalid(pairs)) =>
        add(kind, label, invalid, { raw: encode(pairs) })
      send('the body', basePairs)
      for (const key of PROTOTYPE_KEYS) send(`a field named ${key}`, [...basePairs, [key, 'x']], true)
      if (kind === 'multipart' && !op.takesMultipart) continue
      if (kind === 'multipart') {
        for (const key of PROTOTYPE_KEYS)
          send(`a file named ${key}`, [...basePairs, [key, 'x', 'walker.txt']], true)
      }
      for (const [name, sub] of Object.entries<JsonSchema>(topLevel)) {
        const others = basePairs.filter(([key]) => topName(key) !== name)
        if ((shape?.required ?? []).includes(name)) send(`${name} left out`, others)
        const file = files.get(name)
        if (file) {
          // Laravel's file rule: text where a file goes is refused, not dropped.
          const field = file === 'many' ? `${name}[]` : name
          if (kind === 'multipart')
            send(`${name} = text instead of a file`, [...others, [field, 'not a file']], true)
          continue
        }
        for (const [label, value] of FORM_VALUES) send(`${name} = ${label}`, [...others, [name, value]])
        // The form's ways to send an object and an array: bracketed names, or the field given twice.
        send(`${name}[a] = 1`, [...others, [`${name}[a]`, '1']])
        send(`${name}[] = one`, [...others, [`${name}[]`, 'one']])
        send(`${name} given twice`, [...others, [name, 'one'], [name, 'two']])
        if (typesOf(sub).has('string') || typesOf(sub).size === 0) {
          send(`${name} with a NUL byte`, [...others, [name, `walker\u0000${hex()}`]])
        }
        // Laravel's string rule: a file where text goes is refused.
        if (kind === 'multipart') send(`${name} = a file`, [...others, [name, 'walker', 'walker.txt']], true)
      }
    }
  }

  const body = baseBody()
  for (const param of op.query) {
    const others = baseQuery.filter(([k]) => k !== param.name)
    const send = (label: string, pairs: [string, string][]) => {
      const invalid = !accepts(queryCheck, parseQuery(queryText(pairs)))
      add('query', label, invalid, { url: urlOf(baseParams, pairs), json: body })
    }
    for (const [label, raw] of QUERY_VALUES) send(`${param.name} = ${label}`, [...others, [param.name, raw]])
    send(`${param.name} given twice`, [...others, [param.name, '1'], [param.name, '2']])
    send(`${param.name}[a] = 1`, [...others, [`${param.name}[a]`, '1']])
    if (param.required) send(`${param.name} left out`, others)
  }

  for (const param of op.params) {
    for (const [label, raw, alwaysInvalid] of PATH_VALUES) {
      let decoded: string | null
      try {
        decoded = decodeURIComponent(raw)
      } catch {
        decoded = null
      }
      const invalid =
        alwaysInvalid || decoded === null || !accepts(paramsCheck, { ...baseParams, [param.name]: decoded })
      add('path', `${param.name} = ${label}`, invalid, {
        url: urlOf({ ...baseParams, [param.name]: raw }, baseQuery),
        json: body,
      })
    }
  }
  return cases
}

// ---------------------------------------------------------------------------------------------
// Sending and judging.

/** What is wrong with an answer to a case, or null when it keeps the error contract. */
export function verdict(c: BadInputCase, res: ClientResponse): string | null {
  const where = `${c.operation} [${c.kind}] ${c.label}: ${res.status} ${res.text.slice(0, 160)}`
  if (res.status >= 500) return where
  if (c.invalid && (res.status < 400 || res.status >= 500)) return `${where} (expected a 4xx)`
  if (res.status < 400) return null
  if (!(res.headers.get('content-type') ?? '').includes('application/json')) return `${where} (not JSON)`
  if (typeof res.data?.message !== 'string') return `${where} (no string message)`
  if (res.status === 422) {
    const errors = res.data.errors
    const ok =
      errors !== null &&
      typeof errors === 'object' &&
      !Array.isArray(errors) &&
      Object.keys(errors).length > 0 &&
      Object.values(errors).every(
        (list) => Array.isArray(list) && list.length > 0 && list.every((m) => typeof m === 'string'),
      )
    if (!ok) return `${where} (422 without an errors bag of string arrays)`
  }
  return null
}

export interface WalkResult {
  violations: string[]
  /** Each case with the status it got (0 when the request itself failed), in the order given. */
  answers: { case: BadInputCase; status: number }[]
  /** Users the walker signed in with (each a new account), so row counts can account for them. */
  usersCreated: number
}

const send = (client: TestClient, c: BadInputCase) =>
  c.raw
    ? client.request(c.method, c.url, undefined, {
        raw: c.raw.payload,
        headers: { 'content-type': c.raw.contentType },
      })
    : client.request(c.method, c.url, c.json)

/**
 * Sends each case as a signed-in, verified admin with a valid CSRF token, a few operations at a
 * time, each operation with its own admin. A case that ended the session or switched the account
 * (logout, a login that succeeded) gets a fresh admin before the next; a throttled answer moves the
 * test clock past the window and is sent again, so throttles do not stand in for validation.
 */
export async function walk(t: TestApp, cases: BadInputCase[], concurrency = 4): Promise<WalkResult> {
  const statuses = new Map<BadInputCase, number>()
  const problems = new Map<BadInputCase, string>()
  let usersCreated = 0

  const walkOperation = async (group: BadInputCase[]) => {
    let admin: { client: TestClient; id: number } | null = null
    for (const c of group) {
      if (admin) {
        const me = await admin.client.get('/api/user')
        if (me.status !== 200 || me.data?.id !== admin.id) admin = null
      }
      if (!admin) {
        const { client, user } = await signedInClient(t, { isAdmin: true, verified: true })
        usersCreated += 1
        admin = { client, id: user.id }
      }
      try {
        let res = await send(admin.client, c)
        if (res.status === 429) {
          t.clock.advance((Number(res.headers.get('retry-after') ?? 60) + 1) * 1000)
          res = await send(admin.client, c)
        }
        statuses.set(c, res.status)
        const problem = verdict(c, res)
        if (problem) problems.set(c, problem)
      } catch (error) {
        statuses.set(c, 0)
        problems.set(c, `${c.operation} [${c.kind}] ${c.label}: ${(error as Error).message}`)
      }
    }
  }

  const groups = new Map<string, BadInputCase[]>()
  for (const c of cases) groups.set(c.operation, [...(groups.get(c.operation) ?? []), c])
  const queue = [...groups.values()]
  const worker = async () => {
    for (let group = queue.shift(); group; group = queue.shift()) await walkOperation(group)
  }
  await Promise.all(Array.from({ length: concurrency }, worker))

  return {
    violations: cases.flatMap((c) => problems.get(c) ?? []),
    answers: cases.map((c) => ({ case: c, status: statuses.get(c) ?? 0 })),
    usersCreated,
  }
}
