import { UpstreamError } from '../../../lib/upstream/client.ts'
import type { ProxyService } from '../../proxy/proxy.service.ts'
import type { ProxyRoute } from '../../proxy/proxy-route.ts'
import { accountOf, type ToolContext, ToolRefusal } from './tool-definition.ts'

/** The row of a proxied route table for `method url`; a missing one is a programming error found at start. */
export function routeOf(routes: readonly ProxyRoute[], url: string, method = 'GET'): ProxyRoute {
  const route = routes.find((row) => row.url === url && row.method === method)
  if (!route) throw new Error(`no proxied route ${method} ${url}`)
  return route
}

/**
 * Calls a proxied route as the signed-in user would through the API: the same rule row, so the
 * same cache scope (shared, or keyed by the user) and the same `X-User-Id` to the upstream.
 */
export function proxyCaller(proxy: ProxyService) {
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
