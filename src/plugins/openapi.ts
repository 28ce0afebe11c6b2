import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** OpenAPI 3.1 built from the route schemas, at /api/openapi.json; an interactive reference at /docs. */
async function openapiPlugin(app: FastifyInstance, { appUrl }: { appUrl: string }) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Trading Application JSON API',
        version: '1.0.0',
        description:
          'The JSON API behind the trading single-page app. Sign in with the session cookie; ' +
          'every mutation carries the XSRF-TOKEN cookie value in the X-XSRF-TOKEN header.',
      },
      servers: [{ url: appUrl }],
      components: {
        securitySchemes: {
          sessionCookie: { type: 'apiKey', in: 'cookie', name: 'app_session' },
        },
      },
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } })
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}

export default fp(openapiPlugin, { name: 'openapi' })
