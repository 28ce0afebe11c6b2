import { LRUCache } from 'lru-cache'
import { type Clock, systemClock } from '../clock.ts'
import type { CacheDriver } from './driver.ts'

interface Entry {
  value: string
  freshUntil: number
  /** Past its TTL it is kept until here, for stale answers only. */
  keptUntil: number
  tags: readonly string[]
}

// Rough per-entry bookkeeping (the entry object, the LRU's slots, the tag index) on top of the bytes.
const ENTRY_OVERHEAD = 128

/**
 * In-process LRU bounded by bytes. Expiry reads the injected clock (not lru-cache's own timer), so
 * tests move time instead of waiting; an entry past its keeping time is dropped when read or evicted
 * by the LRU.
 */
export function createMemoryCacheDriver(options: { maxBytes: number; clock?: Clock }): CacheDriver {
  const clock = options.clock ?? systemClock
  const keysByTag = new Map<string, Set<string>>()

  const unindex = (key: string, tags: readonly string[]) => {
    for (const tag of tags) {
      const keys = keysByTag.get(tag)
      if (!keys) continue
      keys.delete(key)
      if (keys.size === 0) keysByTag.delete(tag)
    }
  }

  const lru = new LRUCache<string, Entry>({
    maxSize: options.maxBytes,
    sizeCalculation: (entry, key) => Buffer.byteLength(entry.value) + key.length * 2 + ENTRY_OVERHEAD,
    // Every way out of the LRU (eviction, overwrite, delete) keeps the tag index exact.
    dispose: (entry, key) => unindex(key, entry.tags),
  })

  const peek = (key: string) => {
    const entry = lru.get(key)
    if (!entry) return undefined
    const now = clock.nowMs()
    if (entry.keptUntil <= now) {
      lru.delete(key)
      return undefined
    }
    return { value: entry.value, freshForMs: entry.freshUntil - now }
  }

  return {
    peek,

    async get(key) {
      return peek(key)
    },

    async set(key, value, { ttlSeconds, staleSeconds }, tags) {
      const freshUntil = clock.nowMs() + ttlSeconds * 1000
      const entry: Entry = { value, freshUntil, keptUntil: freshUntil + staleSeconds * 1000, tags: [...tags] }
      lru.set(key, entry)
      // An entry larger than the whole bound is not stored; only index what the LRU kept.
      if (lru.peek(key) !== entry) return
      for (const tag of entry.tags) {
        const keys = keysByTag.get(tag)
        if (keys) keys.add(key)
        else keysByTag.set(tag, new Set([key]))
      }
    },

    async invalidateTags(tags) {
      for (const tag of tags) {
        for (const key of [...(keysByTag.get(tag) ?? [])]) lru.delete(key)
        keysByTag.delete(tag)
      }
    },

    async clear() {
      lru.clear()
      keysByTag.clear()
    },

    async close() {
      lru.clear()
    },
  }
}
