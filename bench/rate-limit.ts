/**
 * `npm run bench:rate-limit`: what one hit of the in-process rate-limit store (no REDIS_URL) costs
 * with few live windows and with many. Each size is filled with distinct keys (a long window, so
 * none expires), then HITS hits cycle over existing keys, ROUNDS times; the median time per hit is
 * taken. Printed: the per-hit cost at each size and the ratio of the largest to the smallest, whose
 * goal is to stay flat (issue 25 item 11: the old store scanned every window per hit past 10,000).
 * BENCH_JSON=path writes the figures there.
 */

import { systemClock } from '../src/lib/clock.ts'
import { createMemoryRateLimitStore } from '../src/lib/rate-limit/memory.ts'
import { median, writeBenchJson } from './harness.ts'
import { createTargets } from './targets.ts'

const SIZES = [5_000, 60_000] as const
const HITS = 200_000
const ROUNDS = 5
const GOAL_RATIO = 2

function nsPerHit(size: number): number {
  const store = createMemoryRateLimitStore(systemClock)
  const keys = Array.from({ length: size }, (_, i) => `login:${i}`)
  for (const key of keys) store.hit(key, 3600)
  const rounds: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.hrtime.bigint()
    for (let i = 0; i < HITS; i++) store.hit(keys[i % size] as string, 3600)
    rounds.push(Number(process.hrtime.bigint() - started) / HITS)
  }
  return median(rounds)
}

const figures: Record<string, number> = {}
for (const size of SIZES) {
  figures[`ns_per_hit_${size}`] = nsPerHit(size)
  console.log(`${size} live windows: ${figures[`ns_per_hit_${size}`]?.toFixed(0)} ns per hit`)
}
const ratio = (figures[`ns_per_hit_${SIZES[1]}`] ?? 0) / (figures[`ns_per_hit_${SIZES[0]}`] ?? 1)
figures.ratio = ratio
const targets = createTargets()
targets.check(`rate-limit-hit-${SIZES[1]}-over-${SIZES[0]}-windows`, ratio, '<=', GOAL_RATIO)
writeBenchJson('rate-limit', { ...figures, targets: targets.results })
