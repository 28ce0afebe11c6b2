import { isObject, message, type SimAnswer } from './answers.ts'
import { catalogueRoutes } from './catalogue/routes.ts'
import { userRoutes } from './users/routes.ts'
import { createUserStore } from './users/store.ts'

export type { SimAnswer } from './answers.ts'

/** One request as the simulator sees it: the raw path, the query, the caller's X-User-Id and the JSON body. */
export interface SimRequest {
  method: string
  /** The raw (still encoded) path; each segment is decoded once when matched. */
  path: string
  query: URLSearchParams
  userId: string | undefined
  body: unknown
  /** Scheme and host the caller used, for pagination links (default http://localhost). */
  origin?: string
}

export interface Simulator {
  handle(request: SimRequest): SimAnswer
}

/** Each `:name` segment matches one raw segment, decoded once; undefined when the path does not fit. */
function match(pattern: string[], segments: string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined
  const params: Record<string, string> = {}
  for (const [i, part] of pattern.entries()) {
    const segment = segments[i] as string
    if (part.startsWith(':')) {
      try {
        params[part.slice(1)] = decodeURIComponent(segment)
      } catch {
        return undefined
      }
    } else if (part !== segment) return undefined
  }
  return params
}

/**
 * The simulated upstream without its transport: a pure request -> answer function over in-memory
 * state. server.ts puts it behind HTTP with the token check; the tests' fake upstream reuses it.
 */
export function createSimulator(options: { now?: () => number } = {}): Simulator {
  const store = createUserStore(options.now)
  const table = [...catalogueRoutes, ...userRoutes(store)].map(([method, path, handler, scope]) => ({
    method,
    pattern: path.split('/'),
    handler,
    scope,
  }))
  return {
    handle(request) {
      const path = request.path.length > 1 ? request.path.replace(/\/+$/, '') : request.path
      const segments = path.split('/')
      const candidates = table
        .map((route) => ({ route, params: match(route.pattern, segments) }))
        .filter((c) => c.params !== undefined)
      if (candidates.length === 0) return message(404, `The route ${path.slice(1)} could not be found.`)
      const method = request.method.toUpperCase() === 'HEAD' ? 'GET' : request.method.toUpperCase()
      const found = candidates.find((c) => c.route.method === method)
      if (!found) {
        const allowed = [...new Set(candidates.map((c) => c.route.method))].join(', ')
        return message(
          405,
          `The ${method} method is not supported for route ${path.slice(1)}. Supported methods: ${allowed}.`,
        )
      }
      if (found.route.scope === 'user' && !request.userId) {
        return message(400, 'The X-User-Id header is required for per-user data.')
      }
      return found.route.handler({
        params: found.params ?? {},
        query: request.query,
        body: isObject(request.body) ? request.body : {},
        rawBody: request.body,
        origin: request.origin ?? 'http://localhost',
        path,
        userId: request.userId ?? '',
      })
    },
  }
}
