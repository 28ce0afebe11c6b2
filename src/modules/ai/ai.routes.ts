import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.ts'
import { commonErrorResponses, Paginated } from '../../lib/http-schemas.ts'
import { keyByNetwork, throttleAddress } from '../../lib/rate-limit/address.ts'
import { sendEventStream } from '../../lib/sse.ts'
import { signedInUser, type ThrottleRule } from '../../plugins/guards.ts'
import { AGENTS, AgentBody, AgentStream, AnalysisEntry, AnalysisQuery } from './ai.schemas.ts'
import { SSE_DONE, sseEvent, UI_STREAM_HEADERS } from './ui-stream.ts'

/** The spec's 60 a minute across the three agents: per user when signed in, per address for guests. */
const aiThrottle: ThrottleRule = {
  name: 'ai',
  max: 60,
  decaySeconds: 60,
  key: (request) => (request.user ? `user:${request.user.id}` : `ip:${throttleAddress(request.ip)}`),
  networkKey: (request) =>
    request.user ? undefined : keyByNetwork(request.ip, (network) => `ip:${network}`),
}

/** The three assistant agents over SSE, the chat analysis job, and `GET /api/analysis`. */
export default async function aiRoutes(fastify: FastifyInstance, { config }: { config: Config }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { agents, analysis } = app.services
  const log = app.log.child({ component: 'ai' })

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
        const question = await agents.prepare(agent, request.user ?? null, request.id, request.body)
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
