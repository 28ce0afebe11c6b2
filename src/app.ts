import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { Config } from './config.ts'
import { type Database, openDatabase } from './db/client.ts'
import { everyAnswerHeaders, requestIdOf } from './lib/answer-headers.ts'
import { type Clock, systemClock } from './lib/clock.ts'
import { lazyChildLogger } from './lib/lazy-logger.ts'
import { createLoggers, wantsPrettyLogs } from './lib/logging.ts'
import { requestValidators } from './lib/request-validators.ts'
import { sharedSerializers } from './lib/serializers.ts'
import activitiesRoutes from './modules/activities/activities.routes.ts'
import adminRoutes from './modules/admin/admin.routes.ts'
import aiRoutes from './modules/ai/ai.routes.ts'
import authRoutes from './modules/auth/auth.routes.ts'
import chatRoutes from './modules/chat/chat.routes.ts'
import creditsRoutes from './modules/credits/credits.routes.ts'
import emailVerificationRoutes from './modules/email-verification/email-verification.routes.ts'
import healthRoutes from './modules/health/health.routes.ts'
import knowledgeBaseRoutes from './modules/knowledge-base/knowledge-base.routes.ts'
import { createLegacyCookies } from './modules/laravel-import/legacy-cookies.ts'
import metricsRoutes from './modules/metrics/metrics.routes.ts'
import passwordConfirmationRoutes from './modules/password-confirmation/password-confirmation.routes.ts'
import passwordResetRoutes from './modules/password-reset/password-reset.routes.ts'
import profileRoutes from './modules/profile/profile.routes.ts'
import proxyRoutes from './modules/proxy/proxy.routes.ts'
import realtimeRoutes from './modules/realtime/realtime.routes.ts'
import supportRoutes from './modules/support/support.routes.ts'
import twoFactorRoutes from './modules/two-factor/two-factor.routes.ts'
import userDataRoutes from './modules/user-data/user-data.routes.ts'
import accessLogPlugin from './plugins/access-log.ts'
import bodyPlugin from './plugins/body.ts'
import cachePlugin from './plugins/cache.ts'
import clockPlugin from './plugins/clock.ts'
import corsPlugin from './plugins/cors.ts'
import dbPlugin from './plugins/db.ts'
import dependencyHealthPlugin from './plugins/dependency-health.ts'
import errorsPlugin, { answerRouterError } from './plugins/errors.ts'
import eventsPlugin from './plugins/events.ts'
import guardsPlugin from './plugins/guards.ts'
import mailerPlugin from './plugins/mailer.ts'
import metricsPlugin from './plugins/metrics.ts'
import openapiPlugin from './plugins/openapi.ts'
import originCheckPlugin from './plugins/origin-check.ts'
import outboxPlugin from './plugins/outbox.ts'
import passwordConfirmationPlugin from './plugins/password-confirmation.ts'
import rateLimitPlugin from './plugins/rate-limit.ts'
import realtimePlugin from './plugins/realtime.ts'
import redisPlugin from './plugins/redis.ts'
import requestDeadlinePlugin from './plugins/request-deadline.ts'
import sessionPlugin from './plugins/session.ts'
import shutdownPlugin from './plugins/shutdown.ts'
import storagePlugin from './plugins/storage.ts'
import upstreamPlugin from './plugins/upstream.ts'
import warmReadsPlugin, { warmReadServerFactory } from './plugins/warm-reads.ts'
import { buildServices, type ServiceOverrides } from './services.ts'

/** What tests (or another host) may hand in instead of what the config describes. */
export interface AppOverrides {
  database?: Database
  redis?: Redis | null
  clock?: Clock
  /** A pino logger, e.g. one writing to a stream a test reads; it takes the access lines too. */
  loggerInstance?: Logger
  /** The folder of knowledge base articles synced at start (default: content/knowledge-base/). */
  knowledgeBaseDir?: string
  /** The billing catalog, or a stand-in for a built service (src/services.ts). */
  services?: ServiceOverrides
}

/**
 * The database the config names: PostgreSQL for DATABASE_URL, else PGlite under DATA_DIR. `long`: for
 * the CLI, whose commands may rightly take longer than a request's statements.
 */
export function openConfiguredDatabase(config: Config, { long = false } = {}): Promise<Database> {
  return openDatabase(
    config.databaseUrl
      ? {
          url: config.databaseUrl,
          poolSize: config.databasePoolSize,
          pooler: config.databasePooler,
          timeouts: config.databaseTimeouts,
          long,
        }
      : { dataDir: `${config.dataDir}/db` },
  )
}

/** Builds the whole service: infrastructure plugins first, then every module, in one explicit list. */
export async function buildApp(config: Config, overrides: AppOverrides = {}): Promise<FastifyInstance> {
  const database = overrides.database ?? (await openConfiguredDatabase(config))
  await database.migrate()
  // Built by the redis plugin (or handed in); whether there is one decides what health watches.
  const usesRedis = overrides.redis !== undefined ? overrides.redis !== null : config.redisUrl !== undefined

  // A logger handed in (tests) takes the access lines too.
  const loggers = overrides.loggerInstance
    ? { app: overrides.loggerInstance, access: overrides.loggerInstance }
    : createLoggers(config.logLevel, wantsPrettyLogs(config.logFormat, config.env))
  const app = Fastify({
    // Typed as Fastify's logger, so the instance's type is the one every plugin and route declares.
    loggerInstance: loggers.app as FastifyBaseLogger,
    bodyLimit: 1024 * 1024,
    // A request's headers and body must arrive in time, so a half-sent one cannot hold a connection
    // (and its memory) for ever; timed until the request is in, so a long answer (server-sent
    // events) is not cut, and a WebSocket leaves the HTTP server's timing at its upgrade.
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    // Node looks for expired requests every connectionsCheckingInterval (30 s by its default, which
    // would let a short time-out run that much over).
    http: { headersTimeout: config.http.headersTimeoutMs, connectionsCheckingInterval: 1_000 },
    // Fastify's own server, with the warm-read lane in front of its handler (plugins/warm-reads.ts).
    serverFactory: warmReadServerFactory,
    // Behind TRUSTED_PROXIES, request.ip (throttles, sessions, tickets) is the client their X-Forwarded-For names.
    trustProxy: config.trustedProxies.length > 0 ? [...config.trustedProxies] : false,
    // Path parameters (upstream ids, symbols) may be as long as their schemas allow, 191 characters
    // (UTF-16 units, after decoding); longer ones name no route: 404.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 191 },
    frameworkErrors: answerRouterError,
    // A request that reaches a closing instance (on a connection accepted just before its listener
    // closed) is served, with `Connection: close`, rather than refused with Fastify's own 503: the
    // balancer already left on /up and refused connections (plugins/shutdown.ts).
    return503OnClosing: false,
    // X-Request-Id from a proxy is kept when it is sane; otherwise each request gets a UUID.
    genReqId: (req) => requestIdOf(req.headers['x-request-id']),
    // One access-log line per request (plugins/access-log.ts) instead of Fastify's two.
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger,
    schemaController: {
      compilersFactory: {
        buildSerializer: sharedSerializers(),
        // @fastify/ajv-compiler types this factory's product as Ajv's compile(schema); Fastify calls
        // it with the route's schema definition, as requestValidators takes it.
        buildValidator: requestValidators() as never,
      },
    },
  })
  const answerHeaders = everyAnswerHeaders(config.appUrl)
  // One hook for the headers every answer may carry: a hook is a cost on every request.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    for (const [name, value] of answerHeaders) reply.header(name, value)
    // While draining (plugins/shutdown.ts), a kept-alive connection is closed after its answer.
    if (app.shutdown.draining.aborted) reply.header('connection', 'close')
    done(null, payload)
  })

  await app.register(errorsPlugin)
  await app.register(clockPlugin, { clock: overrides.clock ?? systemClock })
  // Before every plugin that winds down on its phases (outbox, realtime): its preClose runs first.
  await app.register(shutdownPlugin, { graceMs: config.shutdown.graceMs })
  await app.register(eventsPlugin)
  await app.register(metricsPlugin, { config })
  await app.register(dependencyHealthPlugin, {
    used: usesRedis ? (['database', 'redis', 'upstream'] as const) : (['database', 'upstream'] as const),
  })
  await app.register(dbPlugin, { database })
  await app.register(requestDeadlinePlugin, { deadlineMs: config.requestDeadlineMs })
  await app.register(redisPlugin, { redis: overrides.redis, config })
  await app.register(outboxPlugin, { retentionDays: config.outboxRetentionDays })
  await app.register(mailerPlugin, { config })
  await app.register(storagePlugin, { config })
  await app.register(bodyPlugin)
  await app.register(corsPlugin, { origins: config.frontendOrigins })
  await app.register(originCheckPlugin, {
    origins: [new URL(config.appUrl).origin, ...config.frontendOrigins],
  })
  await app.register(rateLimitPlugin)
  await app.register(cachePlugin, { config })
  await app.register(upstreamPlugin, { config })
  // The Laravel original's cookies during its cutover window (LARAVEL_COOKIES_UNTIL); none when unset.
  const legacyCookies = createLegacyCookies({ db: app.db, clock: app.clock, config })
  await app.register(sessionPlugin, { config, foreignCookies: legacyCookies })
  await app.register(guardsPlugin, { appKey: config.appKey, foreignCsrfToken: legacyCookies?.csrfToken })
  await app.register(accessLogPlugin, { logger: loggers.access })
  await app.register(warmReadsPlugin, { config })
  await app.register(passwordConfirmationPlugin, { config })
  await app.register(openapiPlugin, { appUrl: config.appUrl })
  await app.register(realtimePlugin, { config })

  // Every domain service, built once; route plugins take theirs from app.services.
  app.decorate('services', buildServices(app, config, overrides.services))

  // Modules, in the order of the spec's endpoint sections.
  await app.register(healthRoutes)
  await app.register(metricsRoutes, { config })
  await app.register(authRoutes)
  await app.register(passwordResetRoutes)
  await app.register(emailVerificationRoutes)
  await app.register(passwordConfirmationRoutes)
  await app.register(twoFactorRoutes)
  await app.register(profileRoutes)
  await app.register(userDataRoutes)
  await app.register(knowledgeBaseRoutes, { contentDir: overrides.knowledgeBaseDir })
  await app.register(proxyRoutes)
  await app.register(activitiesRoutes)
  await app.register(creditsRoutes, { config })
  await app.register(chatRoutes)
  await app.register(aiRoutes, { config })
  await app.register(realtimeRoutes, { config })
  await app.register(adminRoutes, { config })
  await app.register(supportRoutes)

  return app
}
