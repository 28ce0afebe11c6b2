import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  isEmptyObject,
  nulFields,
  plainForm,
  refuseNulBytes,
  refuseReservedKeys,
  trimStrings,
} from '../lib/body-fields.ts'
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

export default fp(bodyPlugin, { name: 'body' })
