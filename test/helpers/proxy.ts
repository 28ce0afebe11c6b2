import type { TestClient } from './client.ts'

/** The upstream token the proxy tests configure; no answer may ever contain it. */
export const UPSTREAM_TOKEN = 'secret-token'

/** The app's environment for a given fake upstream, with a short time-out so failure tests stay quick. */
export const upstreamEnv = (url: string, timeoutMs = 500) => ({
  UPSTREAM_BASE_URL: url,
  UPSTREAM_API_TOKEN: UPSTREAM_TOKEN,
  UPSTREAM_TIMEOUT_MS: String(timeoutMs),
})

/**
 * One user's reads that a strategy or condition write clears (UPSTREAM.md): strategies, a strategy,
 * a strategy search, a strategy's conditions and activities, conditions, a condition, signals.
 */
export const STRATEGY_GROUP_READS = [
  '/api/strategies',
  '/api/strategies/1',
  '/api/strategies/search/AAPL',
  '/api/strategy/1/conditions',
  '/api/strategy/1/activities',
  '/api/conditions',
  '/api/conditions/1',
  '/api/signals',
] as const

/** Reads that no strategy write touches: shared market data and the user's broker accounts. */
export const UNRELATED_READS = ['/api/markets', '/api/accounts'] as const

/** Each path read once by `client`, answered by its X-Cache header (HIT or MISS). */
export async function cacheStates(client: TestClient, paths: readonly string[]): Promise<string[]> {
  const states: string[] = []
  for (const path of paths) {
    const res = await client.get(path)
    if (res.status !== 200) throw new Error(`${path} answered ${res.status} ${res.text}`)
    states.push(res.headers.get('x-cache') ?? 'none')
  }
  return states
}
