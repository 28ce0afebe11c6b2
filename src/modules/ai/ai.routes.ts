import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import { commonErrorResponses, Paginated } from '../../lib/http-schemas.ts'
import { throttleAddress } from '../../lib/rate-limit/address.ts'
import { sendEventStream } from '../../lib/sse.ts'
import { signedInUser, type ThrottleRule } from '../../plugins/guards.ts'
import { createActivitiesService } from '../activities/activities.service.ts'
import { createKnowledgeBaseService } from '../knowledge-base/knowledge-base.service.ts'
import { createProxyService } from '../proxy/proxy.service.ts'
import { createAgentsService } from './agents/agents.service.ts'
import { AGENTS, AgentBody, AgentStream, AnalysisEntry, AnalysisQuery } from './ai.schemas.ts'
import { createAnalysisJob } from './analysis/analysis.job.ts'
import { createAnalysisService } from './analysis/analysis.service.ts'
import { ANALYSIS_JOB } from './analysis/analysis-requests.ts'
import { countAiCalls } from './calls/ai-call-metrics.ts'
import { createAiCallRecorder } from './calls/ai-call-recorder.ts'
import { configuredModel } from './model.ts'
import { accountTools } from './tools/account-tools.ts'
import { knowledgeBaseTools } from './tools/knowledge-base-tools.ts'
import { marketTools } from './tools/market-tools.ts'
import { proxyCaller } from './tools/proxy-reads.ts'
import { createToolbox } from './tools/toolbox.ts'
import { SSE_DONE, sseEvent, UI_STREAM_HEADERS } from './ui-stream.ts'

/** The spec's 60 a minute across the three agents: per user when signed in, per address for guests. */
const aiThrottle: ThrottleRule = {
  name: 'ai',
  max: 60,
  decaySeconds: 60,
  key: (request) => (request.user ? `user:${request.user.id}` : `ip:${throttleAddress(request.ip)}`),
}

/** The three assistant agents over SSE, the chat analysis job, and `GET /api/analysis`. */
export default async function aiRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const log = app.log.child({ component: 'ai' })
  // The SDK prints provider warnings to the console; they would bypass the log's redaction.
  ;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false

  const model = configuredModel(config)
  const calls = createAiCallRecorder({ db: app.db, clock: app.clock, events: app.events })
  countAiCalls(app.metrics, app.events)
  const analysis = createAnalysisService({ db: app.db, appUrl: config.appUrl })
  const proxy = createProxyService({
    upstream: app.upstream,
    cache: app.cache,
    lifetime: config.cache,
    appUrl: config.appUrl,
  })
  const call = proxyCaller(proxy)
  const toolbox = createToolbox(
    [
      ...knowledgeBaseTools(createKnowledgeBaseService({ db: app.db, clock: app.clock })),
      ...accountTools(
        call,
        createActivitiesService({ db: app.db, clock: app.clock, events: app.events }),
        analysis.latest,
      ),
      ...marketTools(call),
    ],
    log,
  )
  const agents = createAgentsService({
    model,
    toolbox,
    calls,
    edition: config.edition,
    timeoutMs: config.ai.timeoutMs,
    stopping: app.shutdown.closing,
    log,
  })

  app.outbox.handle(
    ANALYSIS_JOB,
    createAnalysisJob({
      db: app.db,
      clock: app.clock,
      appUrl: config.appUrl,
      events: app.events,
      storage: app.storage,
      model,
      calls,
      timeoutMs: config.ai.timeoutMs,
      log,
    }),
    {
      maxAttempts: config.ai.jobAttempts,
      backoffBaseMs: config.ai.jobRetryMs,
      backoffMaxMs: config.ai.jobRetryMs * 8,
      // Longer than any one try, so no other instance takes the job while a try is under way.
      leaseMs: config.ai.timeoutMs + 60_000,
    },
  )

  // A call cannot outlive AI_TIMEOUT_MS; one still `streaming` well past it was cut off by a stop.
  app.addHook('onReady', async () => {
    const closed = await calls.closeInterrupted(config.ai.timeoutMs + 60_000)
    if (closed > 0) log.warn({ closed }, 'AI calls interrupted by a stop recorded as failed')
  })

  for (const agent of AGENTS) {
    app.post(
      `/api/ai/agents/${agent}`,
      {
        config: { ...(agent === 'trading' ? { auth: 'session' as const } : {}), throttle: aiThrottle },
        schema: {
          tags: ['ai'],
          summary: `Ask the ${agent} agent (AI SDK UI message stream over SSE)`,
          body: AgentBody,
          response: { 200: AgentStream, ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        const question = agents.prepare(agent, request.user ?? null, request.id, request.body)
        return sendEventStream(
          reply,
          { headers: UI_STREAM_HEADERS, frame: sseEvent, end: SSE_DONE, log },
          (sink) => agents.answer(question, sink),
        )
      },
    )
  }

  app.get(
    '/api/analysis',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['ai'],
        summary: "AI analyses asked for in the caller's chat groups, newest first",
        querystring: AnalysisQuery,
        response: { 200: Paginated(AnalysisEntry), ...commonErrorResponses },
      },
    },
    async (request) =>
      analysis.list(signedInUser(request).id, request.query, `${config.appUrl}/api/analysis`),
  )
}
