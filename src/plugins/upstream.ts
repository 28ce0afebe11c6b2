import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../config.ts'
import {
  createUnconfiguredUpstreamClient,
  createUpstreamClient,
  type UpstreamClient,
} from '../lib/upstream/client.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The one keep-alive client to the upstream trading-data API; failures throw UpstreamError (500 `{error}`). */
    upstream: UpstreamClient
  }
}

/** Decorates `app.upstream` from config.upstream; without a base URL every call fails with a clear error. */
async function upstreamPlugin(app: FastifyInstance, options: { config: Config; client?: UpstreamClient }) {
  const { upstream } = options.config
  const client =
    options.client ??
    (upstream.baseUrl
      ? createUpstreamClient({
          baseUrl: upstream.baseUrl,
          token: upstream.token,
          timeoutMs: upstream.timeoutMs,
        })
      : createUnconfiguredUpstreamClient())
  app.decorate('upstream', client)
  app.addHook('onClose', async () => client.close())
}

export default fp(upstreamPlugin, { name: 'upstream' })
