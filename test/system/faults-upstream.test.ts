import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestClient } from '../helpers/client.ts'
import { parseSamples } from '../helpers/prometheus.ts'
import { type FaultStack, printFault, startFaultStack, startLoad } from './fault-stack.ts'

/**
 * A 30 s upstream outage under the deployment (nginx over two instances sharing Redis): half of it
 * a hung upstream (every call waits for UPSTREAM_TIMEOUT_MS), half of it refused connections. The
 * entries warmed before it pass their short TTL during it; traders must keep getting them (200,
 * stale, said by Cache-Status), quickly once each instance's breaker has opened, and fresh data
 * must come back by itself once the upstream does.
 */

const TTL_SECONDS = 3
const TIMEOUT_MS = 1000
const COOL_DOWN_MS = 3000
const OUTAGE_MS = 30_000
const METRICS_TOKEN = 'faults-upstream-metrics-token'
const TRADERS = 4

// Shared market data, and each trader's own strategies (a per-user entry).
const READS = [
  '/api/markets',
  '/api/tickers?market_id=US',
  '/api/market-calendar',
  '/api/news?page=1',
  '/api/strategies',
]

let faults: FaultStack
let traders: TestClient[]
beforeAll(async () => {
  faults = await startFaultStack({
    CACHE_TTL_SECONDS: String(TTL_SECONDS),
    UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
    UPSTREAM_BREAKER_COOLDOWN_MS: String(COOL_DOWN_MS),
    PROXY_READS_PER_MINUTE: '100000',
    METRICS_TOKEN,
  })
  traders = await Promise.all(
    Array.from({ length: TRADERS }, async (_, i) => (await faults.signedIn(`Trader ${i}`)).client),
  )
}, 120_000)
afterAll(async () => {
  await faults?.stop()
}, 60_000)

/** A series summed over its samples having these labels, and over both instances. */
async function acrossInstances(name: string, labels: Record<string, string> = {}) {
  let total = 0
  for (const instance of faults.stack.instances) {
    const res = await fetch(`http://${instance.address}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    })
    for (const sample of parseSamples(await res.text())) {
      const matches = Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
      if (sample.name === name && matches) total += sample.value
    }
  }
  return total
}

describe('the upstream down for 30 s', () => {
  it('answers every warm read 200 from stale data, fast, then fresh data once it is back', async () => {
    const upstream = faults.stack.upstream
    const version = { markets: 1 }
    upstream.on('GET', '/markets', () => ({ body: { data: [{ id: 'US', version: version.markets }] } }))
    for (const trader of traders) {
      for (const path of READS) expect((await trader.get(path)).status).toBe(200)
    }

    // Every answer of the outage, as the load sees it, with its Cache-Status.
    const cacheStatuses = new Map<string, number>()
    const slowest = { ms: 0 }
    let round = 0
    const load = startLoad(
      traders,
      async (trader) => {
        const path = READS[round++ % READS.length] as string
        const started = Date.now()
        const res = await trader.get(path)
        slowest.ms = Math.max(slowest.ms, Date.now() - started)
        const status = (res.headers.get('cache-status') ?? 'none').replace(/ttl=-\d+/, 'ttl=-N')
        cacheStatuses.set(status, (cacheStatuses.get(status) ?? 0) + 1)
        return res
      },
      { slowMs: TIMEOUT_MS + 500, expected: (status) => status === 200 },
    )

    const staleBefore = await acrossInstances('trading_api_cache_stale_answers_total')
    upstream.on('*', /.*/, { hang: true })
    await sleep(OUTAGE_MS / 2)
    await upstream.stop()
    await sleep(OUTAGE_MS / 2)
    const outage = await load.stop()
    printFault('upstream down 30 s', outage, { cacheStatuses: Object.fromEntries(cacheStatuses) })

    expect(outage.byStatus).toEqual({ '200': outage.requests })
    // No read waited longer than one upstream call; the breaker keeps all but a few from waiting at all.
    expect(outage.slow).toBe(0)
    const waited = [...cacheStatuses].filter(([status]) => status.includes('detail=stale-if-error'))
    const atOnce = [...cacheStatuses].filter(([status]) => status.includes('detail=circuit-open'))
    const count = (entries: [string, number][]) => entries.reduce((sum, [, n]) => sum + n, 0)
    expect(count(atOnce)).toBeGreaterThan(10 * count(waited))
    expect([...cacheStatuses.keys()].every((status) => status.startsWith('trading-api; '))).toBe(true)
    expect(await acrossInstances('trading_api_cache_stale_answers_total', { reason: 'circuit_open' })).toBe(
      count(atOnce),
    )
    expect(await acrossInstances('trading_api_cache_stale_answers_total')).toBeGreaterThan(staleBefore)
    expect(await acrossInstances('trading_api_dependency_up', { dependency: 'upstream' })).toBe(0)

    // Back, with new data: each instance's next probe closes its breaker and entries refresh.
    upstream.reset()
    version.markets = 2
    upstream.on('GET', '/markets', () => ({ body: { data: [{ id: 'US', version: version.markets }] } }))
    await upstream.start()
    const back = Date.now()
    // Fresh data for every trader, through both instances, and each instance's breaker closed again
    // (a cold key makes a call wherever it lands: a shared entry one instance refreshed is a hit on the other).
    const recovered = async () => {
      for (const trader of traders) {
        await trader.get(`/api/markets?market_id=COLD-${Date.now()}`)
        for (let n = 0; n < 2; n++) {
          const res = await trader.get('/api/markets')
          if (res.status !== 200 || res.data[0]?.version !== 2 || res.headers.get('x-cache') === 'STALE')
            return false
        }
      }
      return (await acrossInstances('trading_api_dependency_up', { dependency: 'upstream' })) === 2
    }
    while (!(await recovered())) {
      if (Date.now() - back > 20_000) throw new Error('no fresh data 20 s after the upstream came back')
      await sleep(200)
    }
    printFault('upstream back', outage, { freshAfterMs: Date.now() - back, slowestMs: slowest.ms })
  }, 60_000)
})
