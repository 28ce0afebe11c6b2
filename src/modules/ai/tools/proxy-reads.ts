import { HttpError } from '../../../lib/errors.ts'
import { UpstreamError } from '../../../lib/upstream/client.ts'
import type { ProxyService } from '../../proxy/proxy.service.ts'
import type { ProxyRoute, UpstreamBudget } from '../../proxy/proxy-route.ts'
import { accountOf, type ToolContext, ToolRefusal } from './tool-definition.ts'

/** The row of a proxied route table for `method url`; a missing one is a programming error found at start. */
export function routeOf(routes: readonly ProxyRoute[], url: string, method = 'GET'): ProxyRoute {
  const route = routes.find((row) => row.url === url && row.method === method)
  if (!route) throw new Error(`no proxied route ${method} ${url}`)
  return route
}

/**
 * Calls a proxied route as the signed-in user would through the API: the same rule row, so the
 * same cache scope (shared, or keyed by the user), the same `X-User-Id` to the upstream, and the
 * same per-user upstream allowance spent first, cached or not. A spent allowance is a refusal
 * the model reads (with the seconds to wait), never a failed stream.
 */
export function proxyCaller(proxy: ProxyService, budget: UpstreamBudget) {
  return async (
    route: ProxyRoute,
    context: ToolContext,
    input: {
      params?: Record<string, string>
      query?: Record<string, unknown>
      body?: Record<string, unknown>
    } = {},
  ): Promise<unknown> => {
    const user = accountOf(context)
    try {
      await budget(route, user)
    } catch (error) {
      throw budgetSpent(error)
    }
    const call = {
      path: route.upstream(input.params ?? {}),
      query: input.query ?? {},
      userId: user.id,
      requestId: context.requestId,
      ...(input.body ? { body: input.body } : {}),
    }
    try {
      const answer = await proxy.call(route, call)
      return answer.body === undefined ? null : JSON.parse(answer.body)
    } catch (error) {
      if (error instanceof UpstreamError && error.upstreamStatus === 404) throw new ToolRefusal('Not found.')
      throw error
    }
  }
}

export type ProxyCaller = ReturnType<typeof proxyCaller>

/** The rate limiter's 429 as the model reads it; anything else as it was thrown. */
function budgetSpent(error: unknown): unknown {
  if (!(error instanceof HttpError) || error.status !== 429) return error
  const seconds = Number(error.headers['retry-after']) || 1
  return new ToolRefusal(`The market data budget is spent for now: retry after ${seconds} seconds.`, {
    retry_after: seconds,
  })
}
