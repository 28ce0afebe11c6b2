// Seeded randomness and a fixed clock: every simulator (and every run) serves the same bytes.

/** mulberry32: small, fast and good enough for plausible fake data. */
export function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** FNV-1a, to seed a PRNG from a string (a user id, a symbol, a filter set). */
export function hashSeed(text: string): number {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return hash >>> 0
}

export const pick = <T>(random: () => number, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)] as T
export const round = (value: number, digits = 2) => Number(value.toFixed(digits))

/** Every generated date counts back from this instant, so answers do not drift with the clock. */
export const SIM_NOW = Date.UTC(2025, 5, 30, 20, 0, 0)
export const simDate = (msBefore: number) =>
  new Date(SIM_NOW - msBefore).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
