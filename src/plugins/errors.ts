import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import FindMyWay from 'find-my-way'
import { databaseFailureOf } from '../db/failures.ts'
import { HttpError, ValidationError } from '../lib/errors.ts'
import { UpstreamError } from '../lib/upstream/client.ts'
import { laravelFieldErrors, summarizeErrors } from '../lib/validation.ts'

// Fastify's own 4xx codes, reworded for people; anything else under 500 keeps Fastify's message.
const frameworkMessages: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'The request body is not valid JSON.',
  FST_ERR_CTP_BODY_TOO_LARGE: 'The request body is too large.',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Media Type.',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'The request body does not match its Content-Length.',
  FST_ERR_CTP_INVALID_TYPE: 'The Content-Type header is invalid.',
}

/** What a 503 for a database failure tells the app to wait before trying again. */
export const DATABASE_RETRY_AFTER_SECONDS = 2

const methodsForAllow = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `true`: other methods on the path answer 404, as for an unknown path, not 405 (GET /metrics). */
    unlisted?: true
  }
}

/** Every error becomes Laravel's JSON: 422 `{message, errors}`, `{message}` otherwise, 500 without details. */
async function errorsPlugin(app: FastifyInstance) {
  // A shadow router of every route, so an unknown method on a known path can answer 405 as Laravel does.
  const methodRouter = FindMyWay({ ignoreTrailingSlash: true })
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) {
      if (method === 'OPTIONS' || route.url.includes('*') || route.config?.unlisted) continue
      try {
        methodRouter.on(method as 'GET', route.url, () => {})
      } catch {
        // the same method and path registered twice is Fastify's error to report, not ours
      }
    }
  })

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error.validation) {
      if (error.validationContext === 'params') return sendNotFound(request, reply)
      const errors = laravelFieldErrors(error.validation, error.validationContext ?? 'body')
      return reply.code(422).send({ message: summarizeErrors(errors), errors })
    }
    if (error instanceof ValidationError) {
      return reply
        .code(error.status)
        .headers(error.headers)
        .send({ message: error.message, errors: error.errors })
    }
    if (error instanceof HttpError) {
      return reply.code(error.status).headers(error.headers).send({ message: error.message })
    }
    // The spec's proxy shape: an upstream failure is 500 `{error}` with a readable message (never a secret).
    if (error instanceof UpstreamError) {
      request.log.warn(
        { upstream: { kind: error.kind, status: error.upstreamStatus, code: error.code } },
        error.message,
      )
      return reply.code(500).send({ error: error.message })
    }
    // PostgreSQL down, restarting or locked: the request may well work in a moment, and nothing about
    // it (its session, its cookies) was wrong. Laravel's 503 shape, with when to try again.
    const failure = databaseFailureOf(error)
    if (failure) {
      if (failure === 'unavailable') app.dependencyHealth.failed('database', error)
      else
        request.log.warn(
          { reason: (error.cause as { code?: unknown })?.code ?? error.code },
          'database time-out',
        )
      return reply.code(503).header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS)).send({
        message: 'Service Unavailable',
      })
    }
    const status = error.statusCode ?? 500
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ message: frameworkMessages[error.code] ?? error.message })
    }
    request.log.error({ err: error }, 'unhandled error')
    return reply.code(500).send({ message: 'Server Error' })
  })

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/'
    const allowed = methodsForAllow.filter((method) => methodRouter.find(method, path) !== null)
    if (allowed.length > 0 && !allowed.includes(request.method as 'GET')) {
      const list = allowed.join(', ')
      return reply
        .code(405)
        .header('allow', list)
        .send({
          message: `The ${request.method} method is not supported for route ${trimPath(path)}. Supported methods: ${list}.`,
        })
    }
    return sendNotFound(request, reply)
  })
}

/**
 * The router's own refusals, before any route or hook runs (Fastify's `frameworkErrors`): an
 * undecodable URL is a 400, a path parameter past the router's length limit names no route (404).
 */
export function answerRouterError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error.code === 'FST_ERR_BAD_URL')
    return reply.code(400).send({ message: 'The request URL is malformed.' })
  return sendNotFound(request, reply)
}

function trimPath(path: string): string {
  const trimmed = path.replace(/^\/+/, '')
  return trimmed.length > 200 ? `${trimmed.slice(0, 200)}...` : trimmed
}

function sendNotFound(request: FastifyRequest, reply: FastifyReply) {
  const path = request.url.split('?')[0] ?? '/'
  return reply.code(404).send({ message: `The route ${trimPath(path)} could not be found.` })
}

export default fp(errorsPlugin, { name: 'errors' })
