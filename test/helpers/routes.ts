/** Methods Laravel's VerifyCsrfToken checks (everything but reads). */
export const MUTATIONS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

// `:name`, optionally followed by a find-my-way regex `(...)` and `?`; `::` is a literal colon.
const PARAM = /::|:(\w+)(\([^)]*\))?\??|\*/g

/** A registered url with every parameter filled (`/api/trades/:id` -> `/api/trades/1`). */
export function concretePath(url: string, value = '1'): string {
  return url.replace(PARAM, (match) => (match === '::' ? ':' : value))
}

/** A registered url as an OpenAPI path (`/api/trades/:id` -> `/api/trades/{id}`). */
export function openApiPath(url: string): string {
  return url.replace(PARAM, (match, name: string | undefined) =>
    match === '::' ? ':' : match === '*' ? '{*}' : `{${name}}`,
  )
}

/** An OpenAPI path with its `{param}` placeholders filled from `values` (raw URL text, not encoded). */
export function fillOpenApiPath(path: string, values: Record<string, string>, fallback = '1'): string {
  return path.replace(/\{([^{}]+)\}/g, (_, name: string) => values[name] ?? fallback)
}
