import formbody from '@fastify/formbody'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

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
  })
}

export default fp(bodyPlugin, { name: 'body' })
