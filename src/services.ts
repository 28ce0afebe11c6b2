import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { Config } from './config.ts'
import { buildCoreServices } from './core-services.ts'
import { createActivitiesService } from './modules/activities/activities.service.ts'
import { createAdminAuditService } from './modules/admin/audit/admin-audit.service.ts'
import { createAdminBillingService } from './modules/admin/billing/admin-billing.service.ts'
import { createAdminUsersService } from './modules/admin/users/admin-users.service.ts'
import { createAgentsService } from './modules/ai/agents/agents.service.ts'
import { createAnalysisJob } from './modules/ai/analysis/analysis.job.ts'
import { createAnalysisService } from './modules/ai/analysis/analysis.service.ts'
import { ANALYSIS_JOB, queueAnalysis } from './modules/ai/analysis/analysis-requests.ts'
import { countAiCalls } from './modules/ai/calls/ai-call-metrics.ts'
import { type AiCallRecorder, createAiCallRecorder } from './modules/ai/calls/ai-call-recorder.ts'
import { type FeatureMeter, unmetered } from './modules/ai/metering.ts'
import { type ConfiguredModel, configuredModel } from './modules/ai/model.ts'
import { OFFLINE_MODEL_ID } from './modules/ai/offline-model.ts'
import { accountTools } from './modules/ai/tools/account-tools.ts'
import { knowledgeBaseTools } from './modules/ai/tools/knowledge-base-tools.ts'
import { marketTools } from './modules/ai/tools/market-tools.ts'
import { proxyCaller } from './modules/ai/tools/proxy-reads.ts'
import { createToolbox } from './modules/ai/tools/toolbox.ts'
import { createLoginBackoff } from './modules/auth/auth.backoff.ts'
import { createDeviceCookies } from './modules/auth/auth.device-cookie.ts'
import { createAuthService } from './modules/auth/auth.service.ts'
import { createAccountRelease } from './modules/chat/account-release.ts'
import type { ChatDeps } from './modules/chat/chat.deps.ts'
import { createGroupsService } from './modules/chat/groups/groups.service.ts'
import { createInvitesService } from './modules/chat/invites/invites.service.ts'
import { createJoinRequestsService } from './modules/chat/join-requests/join-requests.service.ts'
import { createMessagesService } from './modules/chat/messages/messages.service.ts'
import { createPeopleService } from './modules/chat/people/people.service.ts'
import { type BillingCatalog, loadBillingCatalog } from './modules/credits/billing.catalog.ts'
import { createFeatureMeter } from './modules/credits/feature-meter.ts'
import { countHoldTransitions } from './modules/credits/holds/holds.metrics.ts'
import { countPaymentWebhooks } from './modules/credits/purchases/purchases.metrics.ts'
import { createPurchasesService } from './modules/credits/purchases/purchases.service.ts'
import { createStripeGateway } from './modules/credits/purchases/stripe.client.ts'
import { createEmailVerificationService } from './modules/email-verification/email-verification.service.ts'
import { createPasswordResetService } from './modules/password-reset/password-reset.service.ts'
import { createBrowserSessionsService } from './modules/profile/browser-sessions/browser-sessions.service.ts'
import { createProfilePhotosService } from './modules/profile/photos/profile-photos.service.ts'
import { createProfileService } from './modules/profile/profile.service.ts'
import { createProxyService } from './modules/proxy/proxy.service.ts'
import { upstreamBudget } from './modules/proxy/proxy-route.ts'
import { endChannelAccessWithItsReason } from './modules/realtime/access-ends.ts'
import { broadcastChatEvents, notifyHoldChanges } from './modules/realtime/broadcasts.ts'
import { createChannelRules } from './modules/realtime/channels.ts'
import { createChannelAuthService } from './modules/realtime/realtime.service.ts'
import { createSupportService } from './modules/support/support.service.ts'
import { createUserDataService } from './modules/user-data/user-data.service.ts'
import { createAccountDeletionService } from './modules/users/account-deletion.service.ts'
import { createUserViewService } from './modules/users/user-view.service.ts'

/** What tests (or another host) may hand to buildApp in place of what the config describes. */
export interface ServiceOverrides {
  /** The billing catalog (default: config/billing.json). */
  catalog?: BillingCatalog
  /** Replaces built services once all are built (a test's stand-in for one of them). */
  replace?: (built: Services) => Partial<Services>
}

export type Services = ReturnType<typeof assembleServices>

/**
 * The application's services, each built once with its dependencies (see docs/ARCHITECTURE.md,
 * "Where services are built"). Route plugins take what they need from `app.services`; nothing
 * else builds a domain service.
 */
export function buildServices(
  app: FastifyInstance,
  config: Config,
  overrides: ServiceOverrides = {},
): Services {
  const built = assembleServices(app, config, overrides.catalog ?? loadBillingCatalog())
  return { ...built, ...overrides.replace?.(built) }
}

/** Builds every service, in dependency order, then wires what carries consequences between them. */
function assembleServices(app: FastifyInstance, config: Config, catalog: BillingCatalog) {
  const { db, clock, events } = app
  const core = buildCoreServices({ config, db, clock, events })
  const { users, ledger, holds } = core
  const queueMail = app.mailer.queue.bind(app.mailer)

  const verification = createEmailVerificationService({ config, clock, mailer: app.mailer, users })
  const photos = createProfilePhotosService({ users, storage: app.storage, log: app.log })
  const proxy = createProxyService({
    upstream: app.upstream,
    cache: app.cache,
    lifetime: config.cache,
    upstreamTimeoutMs: config.upstream.timeoutMs,
    appUrl: config.appUrl,
  })
  const activities = createActivitiesService({ db, clock, events })
  const adminAudit = createAdminAuditService({ db, clock })

  const aiLog = app.log.child({ component: 'ai' })
  const model = configuredModel(config)
  const aiCalls = createAiCallRecorder({ db, clock, events })
  // What AI answers and analyses cost, from the catalogue, on the ledger (docs/credits.md).
  const meter =
    model.name === OFFLINE_MODEL_ID ? unmetered : createFeatureMeter({ ledger, catalog, log: aiLog })
  const analysis = createAnalysisService({ db, appUrl: config.appUrl })
  // The AI tools read through the proxy as the API does, spending the same per-user allowance.
  const toolProxy = proxyCaller(proxy, upstreamBudget(app))

  const chatDeps: ChatDeps = {
    db,
    clock,
    appUrl: config.appUrl,
    events,
    storage: app.storage,
    log: app.log,
    presence: app.realtime,
    askAi: (tx, question) =>
      queueAnalysis(tx, app.outbox, { ...question, model: model.name, at: clock.now() }),
    affordAi: (userId) => meter.check(userId, 'ai_analysis', 'ask_ai'),
  }
  const groups = createGroupsService(chatDeps)
  const loginBackoff = createLoginBackoff({
    counters: app.rateLimiter.counters,
    clock,
    users,
    queueMail: (mail) => app.mailer.queue(mail),
  })
  const passwordReset = createPasswordResetService({
    db,
    config,
    clock,
    mailer: app.mailer,
    outbox: app.outbox,
    users,
    events,
    loginBackoff,
  })
  const accountDeletion = createAccountDeletionService({
    db,
    users,
    releases: [createAccountRelease(chatDeps), passwordReset.releaseAccount],
    discardPhoto: photos.discard,
    events,
  })

  // Where links to the app point (checkout's return, invitations): the SPA when it has its own origin.
  const appOrigin = config.frontendOrigins[0] ?? config.appUrl
  const creditsOf = (userId: number) => ledger.summary(userId)
  const built = {
    ...core,
    catalog,
    userView: createUserViewService({ appUrl: config.appUrl, creditsOf }),
    verification,
    auth: createAuthService({ users, clock, verification }),
    loginBackoff,
    deviceCookies: createDeviceCookies({
      appKey: config.appKey,
      clock,
      secure: config.session.secureCookie,
      domain: config.session.domain,
    }),
    passwordReset,
    photos,
    profile: createProfileService({
      db,
      clock,
      users,
      verification,
      mailer: app.mailer,
      accountDeletion,
      events,
    }),
    browserSessions: createBrowserSessionsService({
      sessions: app.sessionStore.sessions,
      remember: app.sessionStore.rememberTokens,
      clock,
    }),
    userData: createUserDataService({ db, clock }),
    proxy,
    activities,
    purchases: createPurchasesService({
      db,
      clock,
      events,
      catalog,
      ledger,
      users,
      gateway: createStripeGateway(config.stripe),
      webhookSecret: config.stripe.webhookSecret,
      returnOrigin: appOrigin,
    }),
    groups,
    invites: createInvitesService({
      ...chatDeps,
      inviteBaseUrl: appOrigin,
      queueMail,
    }),
    joinRequests: createJoinRequestsService(chatDeps),
    messages: createMessagesService(chatDeps),
    people: createPeopleService({ ...chatDeps, users }),
    analysis,
    agents: createAgentsService({
      model,
      toolbox: createToolbox(
        [
          ...knowledgeBaseTools(core.knowledgeBase),
          ...accountTools(toolProxy, activities, analysis.latest),
          ...marketTools(toolProxy),
        ],
        aiLog,
      ),
      calls: aiCalls,
      edition: config.edition,
      timeoutMs: config.ai.timeoutMs,
      stopping: app.shutdown.closing,
      log: aiLog,
      meter,
    }),
    channels: createChannelAuthService({
      key: config.realtime.key,
      secret: config.realtime.secret,
      rules: createChannelRules({ groups, appUrl: config.appUrl }),
      socketOwner: (socketId) => app.realtime.hub.ownerOf(socketId),
    }),
    adminUsers: createAdminUsersService({
      db,
      clock,
      appUrl: config.appUrl,
      users,
      queueMail,
      verificationUrl: verification.verificationUrl,
      creditsOf,
      accountDeletion,
      events,
      audit: adminAudit,
    }),
    adminBilling: createAdminBillingService({
      db,
      catalog,
      ledger,
      holds,
      users,
      audit: adminAudit,
      appUrl: config.appUrl,
    }),
    support: createSupportService({ db, clock, supportEmail: config.supportEmail, queueMail }),
  }

  wireConsequences(app, config, { model, calls: aiCalls, log: aiLog, meter })
  return built
}

/**
 * The consequences between domains that no request carries: listeners on app.events (real-time
 * broadcasts and notifications, metrics, channel access ending), the AI calls a stop interrupted,
 * and the outbox's jobs.
 */
function wireConsequences(
  app: FastifyInstance,
  config: Config,
  ai: { model: ConfiguredModel; calls: AiCallRecorder; log: FastifyBaseLogger; meter: FeatureMeter },
): void {
  const { events } = app
  countAiCalls(app.metrics, events)
  countHoldTransitions(app.metrics, events)
  countPaymentWebhooks(app.metrics, events)
  broadcastChatEvents(app)
  notifyHoldChanges(app)
  endChannelAccessWithItsReason(app)
  // A call cannot outlive AI_TIMEOUT_MS; one still `streaming` well past it was cut off by a stop.
  app.addHook('onReady', async () => {
    const closed = await ai.calls.closeInterrupted(config.ai.timeoutMs + 60_000)
    if (closed > 0) ai.log.warn({ closed }, 'AI calls interrupted by a stop recorded as failed')
  })
  app.outbox.handle(
    ANALYSIS_JOB,
    createAnalysisJob({
      db: app.db,
      clock: app.clock,
      appUrl: config.appUrl,
      events,
      storage: app.storage,
      model: ai.model,
      calls: ai.calls,
      timeoutMs: config.ai.timeoutMs,
      log: ai.log,
      meter: ai.meter,
    }),
    {
      maxAttempts: config.ai.jobAttempts,
      backoffBaseMs: config.ai.jobRetryMs,
      backoffMaxMs: config.ai.jobRetryMs * 8,
      // Longer than any one try, so no other instance takes the job while a try is under way.
      leaseMs: config.ai.timeoutMs + 60_000,
    },
  )
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The application's domain services, built once (src/services.ts). */
    services: Services
  }
}
