import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { createTestClock } from '../../../test/helpers/clock.ts'
import { eventuallyPasses } from '../../../test/helpers/passes.ts'
import type { Clock } from '../clock.ts'
import { type Cache, createCache } from './cache.ts'
import type { CacheDriver } from './driver.ts'
import { createFailoverCacheDriver } from './failover.ts'
import { createMemoryCacheDriver } from './memory.ts'
import { createRedisCacheDriver } from './redis.ts'
import { REVALIDATING } from './remembered.ts'

const redisUrl = process.env.TEST_REDIS_URL
const redisClients: Redis[] = []
/** A client of its own key prefix, so each test sees an empty cache whatever ran before. */
function redisClient(prefix = `test:${randomBytes(6).toString('hex')}:`): Redis {
  const client = new Redis(redisUrl ?? '', { keyPrefix: prefix })
  redisClients.push(client)
  return client
}

const opened: { cache: Cache; driver: CacheDriver }[] = []
afterEach(async () => {
  for (const { cache, driver } of opened.splice(0)) {
    await driver.clear?.()
    await cache.close()
  }
})
afterAll(async () => {
  await Promise.all(redisClients.map((c) => c.quit()))
})

interface Harness {
  cache: Cache
  /** Lets ms pass for the store: the test clock for memory, real time for Redis (whose clock we cannot move). */
  pass(ms: number): Promise<void>
}

/** The cache over driver; `clock` tells it how long loads run (the memory driver's own, in tests). */
function open(driver: CacheDriver, clock?: Clock): Cache {
  const cache = createCache(driver, { clock })
  opened.push({ cache, driver })
  return cache
}

// One contract, every driver: Redis joins when the run has one (CI's PostgreSQL + Redis run).
const drivers: [string, () => Harness][] = [
  [
    'memory',
    () => {
      const clock = createTestClock()
      const cache = open(createMemoryCacheDriver({ maxBytes: 1024 * 1024, clock }), clock)
      return { cache, pass: async (ms) => clock.advance(ms) }
    },
  ],
  ...(redisUrl
    ? [
        [
          'redis',
          (): Harness => ({ cache: open(createRedisCacheDriver(redisClient())), pass: (ms) => sleep(ms) }),
        ] as [string, () => Harness],
      ]
    : []),
]

/** A loader that counts its calls and answers what it is told, when the test says so. */
function loader<T>(value: T) {
  let release!: () => void
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  let gated = false
  const fn = async () => {
    fn.calls++
    if (gated) await gate
    return value
  }
  fn.calls = 0
  fn.hold = () => {
    gated = true
    return release
  }
  return fn
}

const ttl = { ttlSeconds: 60 }

describe.each(drivers)('cache contract: %s driver', (_name, makeHarness) => {
  it('misses once, then hits with the same JSON value without calling the loader', async () => {
    const { cache } = makeHarness()
    const value = { markets: [{ id: 'US', name: 'United States', open: true, tz: null }], n: 1.5 }
    const fn = loader(value)
    expect(await cache.remember('markets', ttl, fn)).toEqual({ value, hit: false })
    expect(await cache.remember('markets', ttl, fn)).toEqual({ value, hit: true })
    expect(fn.calls).toBe(1)
    // Another key is another entry.
    const other = loader(['x'])
    expect(await cache.remember('markets?x=1', ttl, other)).toEqual({ value: ['x'], hit: false })
    expect(other.calls).toBe(1)
  })

  it('rememberJson stores JSON text as is and answers it unchanged, with the same single-flight', async () => {
    const { cache } = makeHarness()
    const text = '{"data":[{"name":"Zürich \\"quoted\\""}], "spacing" :  1}'
    let calls = 0
    const fn = async () => {
      calls++
      await sleep(10)
      return text
    }
    const cold = await Promise.all(Array.from({ length: 20 }, () => cache.rememberJson('raw', ttl, fn)))
    for (const result of cold) expect(result).toEqual({ value: text, hit: false })
    expect(await cache.rememberJson('raw', ttl, fn)).toEqual({ value: text, hit: true })
    expect(calls).toBe(1)
  })

  it('expires an entry after its TTL, not before', async () => {
    const { cache, pass } = makeHarness()
    const fn = loader('v')
    await cache.remember('short', { ttlSeconds: 0.4 }, fn)
    await pass(100)
    expect((await cache.remember('short', { ttlSeconds: 0.4 }, fn)).hit).toBe(true)
    await pass(400)
    expect(await cache.remember('short', { ttlSeconds: 0.4 }, fn)).toEqual({ value: 'v', hit: false })
    expect(fn.calls).toBe(2)
  })

  it('stores nothing for a TTL of 0 or a value JSON cannot hold', async () => {
    const { cache } = makeHarness()
    const fn = loader(1)
    await cache.remember('zero', { ttlSeconds: 0 }, fn)
    await cache.remember('zero', { ttlSeconds: 0 }, fn)
    expect(fn.calls).toBe(2)
    const nothing = loader(undefined)
    await cache.remember('undef', ttl, nothing)
    expect((await cache.remember('undef', ttl, nothing)).hit).toBe(false)
  })

  it('invalidating tags drops exactly the entries stored under them', async () => {
    const { cache } = makeHarness()
    const put = (key: string, tags: string[]) => cache.remember(key, { ttlSeconds: 60, tags }, loader(key))
    await put('a', ['user:1:strategies'])
    await put('b', ['user:1:strategies', 'user:1:signals'])
    await put('c', ['user:1:signals'])
    await put('d', ['user:2:strategies'])
    await put('e', [])
    await cache.invalidateTags(['user:1:strategies'])
    const hits = async () =>
      Object.fromEntries(
        await Promise.all(
          ['a', 'b', 'c', 'd', 'e'].map(async (key) => {
            // A TTL of 0 stores nothing: probing does not refill what it finds missing.
            const { hit } = await cache.remember(key, { ttlSeconds: 0 }, loader('fresh'))
            return [key, hit] as const
          }),
        ),
      )
    expect(await hits()).toEqual({ a: false, b: false, c: true, d: true, e: true })
    await cache.invalidateTags(['user:1:signals', 'no-such-tag'])
    await cache.invalidateTags([])
    expect(await hits()).toEqual({ a: false, b: false, c: false, d: true, e: true })
  })

  it('single-flight: 50 concurrent misses for one key make one loader call', async () => {
    const { cache } = makeHarness()
    const fn = loader({ big: 'answer' })
    const release = fn.hold()
    const all = Array.from({ length: 50 }, () => cache.remember('cold', ttl, fn))
    await sleep(20)
    release()
    const results = await Promise.all(all)
    expect(fn.calls).toBe(1)
    for (const result of results) expect(result).toEqual({ value: { big: 'answer' }, hit: false })
    expect(await cache.remember('cold', ttl, fn)).toEqual({ value: { big: 'answer' }, hit: true })
    expect(fn.calls).toBe(1)
  })

  it('a rejected loader fails every waiting caller and is never cached', async () => {
    const { cache } = makeHarness()
    let calls = 0
    const failing = async () => {
      calls++
      await sleep(10)
      throw new Error('Upstream request failed with status 503')
    }
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => cache.remember('flaky', ttl, failing)),
    )
    expect(calls).toBe(1)
    for (const result of results) {
      expect(result.status).toBe('rejected')
      expect((result as PromiseRejectedResult).reason.message).toBe('Upstream request failed with status 503')
    }
    const fn = loader('recovered')
    expect(await cache.remember('flaky', ttl, fn)).toEqual({ value: 'recovered', hit: false })
    expect(await cache.remember('flaky', ttl, fn)).toEqual({ value: 'recovered', hit: true })
  })

  it('a load running when its tag is invalidated is answered, not stored, and not joined by later callers', async () => {
    const { cache } = makeHarness()
    const before = loader('before the write')
    const release = before.hold()
    const first = cache.remember('strategies', { ttlSeconds: 60, tags: ['user:1'] }, before)
    await sleep(20)
    await cache.invalidateTags(['user:1'])
    const after = loader('after the write')
    const second = await cache.remember('strategies', { ttlSeconds: 60, tags: ['user:1'] }, after)
    expect(second).toEqual({ value: 'after the write', hit: false })
    release()
    expect(await first).toEqual({ value: 'before the write', hit: false })
    expect(await cache.remember('strategies', { ttlSeconds: 60, tags: ['user:1'] }, loader('x'))).toEqual({
      value: 'after the write',
      hit: true,
    })
  })

  describe('past the TTL, within staleSeconds (grace)', () => {
    const fails = (message = 'Upstream request timed out after 500 ms') => {
      const fn = async (): Promise<string> => {
        fn.calls++
        throw new Error(message)
      }
      fn.calls = 0
      return fn
    }
    // Short enough for Redis, whose clock only real time moves: 0.4 s fresh, then 0.4 s of grace.
    const graced = (tags: string[] = []) => ({
      ttlSeconds: 0.4,
      staleSeconds: 0.4,
      tags,
      staleIf: (error: unknown) => ((error as Error).message.includes('timed out') ? 'timeout' : undefined),
    })

    it('answers the old value when the load fails as staleIf allows, and says so', async () => {
      const { cache, pass } = makeHarness()
      await cache.remember('k', graced(), loader('old'))
      await pass(500)
      const failing = fails()
      const answer = await cache.remember('k', graced(), failing)
      expect(answer).toMatchObject({ value: 'old', hit: false, stale: { reason: 'timeout' } })
      expect(answer.stale?.expiredMs).toBeGreaterThanOrEqual(50)
      expect(String(answer.stale?.error)).toContain('timed out')
      expect(failing.calls).toBe(1)
      // A failure staleIf refuses (an upstream 404 is an answer) is thrown as ever.
      await expect(cache.remember('k', graced(), fails('failed with status 404'))).rejects.toThrow('404')
    })

    it('loads a new value when it can, answered as expired, not stale', async () => {
      const { cache, pass } = makeHarness()
      await cache.remember('k', graced(), loader('old'))
      await pass(500)
      expect(await cache.remember('k', graced(), loader('new'))).toEqual({
        value: 'new',
        hit: false,
        expired: true,
      })
      expect(await cache.remember('k', graced(), loader('newer'))).toEqual({ value: 'new', hit: true })
    })

    it('never past staleSeconds, and never without them', async () => {
      const { cache, pass } = makeHarness()
      await cache.remember('graced', graced(), loader('old'))
      await cache.remember('plain', { ttlSeconds: 0.4 }, loader('old'))
      await pass(500)
      await expect(cache.remember('plain', { ...graced(), staleSeconds: 0 }, fails())).rejects.toThrow(
        'timed out',
      )
      await pass(400)
      await expect(cache.remember('graced', graced(), fails())).rejects.toThrow('timed out')
    })

    it('while a load of it runs, answers every other caller the old value at once, with one loader call', async () => {
      const { cache, pass } = makeHarness()
      await cache.remember('k', graced(), loader('old'))
      await pass(500)
      const next = loader('new')
      const release = next.hold()
      const first = cache.remember('k', graced(), next)
      const others = await Promise.all(Array.from({ length: 5 }, () => cache.remember('k', graced(), next)))
      for (const answer of others) {
        expect(answer).toMatchObject({ value: 'old', hit: false, stale: { reason: REVALIDATING } })
        expect(answer.stale?.expiredMs).toBeGreaterThanOrEqual(50)
      }
      await eventuallyPasses(() => expect(next.calls).toBe(1))
      release()
      expect(await first).toEqual({ value: 'new', hit: false, expired: true })
      expect(await cache.remember('k', graced(), loader('unused'))).toEqual({ value: 'new', hit: true })
      expect(next.calls).toBe(1)
    })

    it('while its refresh runs past the TTL, answers the old value at once and calls no other loader', async () => {
      const { cache, pass } = makeHarness()
      const options = { ...graced(), refreshAheadSeconds: 0.2 }
      await cache.remember('k', options, loader('old'))
      await pass(300)
      const next = loader('new')
      const release = next.hold()
      expect(await cache.remember('k', options, next)).toEqual({ value: 'old', hit: true })
      await eventuallyPasses(() => expect(next.calls).toBe(1))
      await pass(200)
      const others = loader('unused')
      const answers = await Promise.all(Array.from({ length: 5 }, () => cache.remember('k', options, others)))
      for (const answer of answers) {
        expect(answer).toMatchObject({ value: 'old', hit: false, stale: { reason: REVALIDATING } })
      }
      expect([next.calls, others.calls]).toEqual([1, 0])
      release()
      await eventuallyPasses(async () =>
        expect(await cache.remember('k', options, others)).toEqual({ value: 'new', hit: true }),
      )
      expect(others.calls).toBe(0)
    })

    it('never an entry whose tag was invalidated, even while its load ran', async () => {
      const { cache, pass } = makeHarness()
      await cache.remember('dropped', graced(['user:1']), loader('old'))
      await cache.remember('racing', graced(['user:2']), loader('old'))
      await pass(500)
      await cache.invalidateTags(['user:1'])
      await expect(cache.remember('dropped', graced(['user:1']), fails())).rejects.toThrow('timed out')

      // Read before the write, failing after it: the old value is not answered.
      let fail!: () => void
      const held = cache.remember(
        'racing',
        graced(['user:2']),
        () =>
          new Promise<string>((_, reject) => {
            fail = () => reject(new Error('Upstream request timed out after 500 ms'))
          }),
      )
      await sleep(20)
      await cache.invalidateTags(['user:2'])
      fail()
      await expect(held).rejects.toThrow('timed out')
    })
  })

  it('refreshes a hit near its expiry in the background, once, answering the old value meanwhile', async () => {
    const { cache, pass } = makeHarness()
    const options = { ttlSeconds: 1, refreshAheadSeconds: 0.5 }
    await cache.remember('popular', options, loader('old'))
    expect((await cache.remember('popular', options, loader('unused'))).value).toBe('old')
    await pass(600)
    const next = loader('new')
    const release = next.hold()
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => cache.remember('popular', options, next)),
    )
    for (const answer of answers) expect(answer).toEqual({ value: 'old', hit: true })
    // With a shared store the refresh first claims the key there, then calls the loader.
    await eventuallyPasses(() => expect(next.calls).toBe(1))
    release()
    await sleep(20)
    expect(await cache.remember('popular', options, loader('unused'))).toEqual({ value: 'new', hit: true })
    expect(next.calls).toBe(1)
  })

  it('with no grace kept, a caller past the TTL gets the value of the refresh under way, not a call of its own', async () => {
    const { cache, pass } = makeHarness()
    const options = { ttlSeconds: 0.4, refreshAheadSeconds: 0.2 }
    await cache.remember('k', options, loader('old'))
    await pass(300)
    const next = loader('new')
    const release = next.hold()
    expect(await cache.remember('k', options, next)).toEqual({ value: 'old', hit: true })
    await eventuallyPasses(() => expect(next.calls).toBe(1))
    await pass(200)
    const other = loader('other')
    const waiting = cache.remember('k', options, other)
    release()
    expect(await waiting).toEqual({ value: 'new', hit: false })
    expect([next.calls, other.calls]).toEqual([1, 0])
  })

  it('clear empties the store', async () => {
    const { cache } = makeHarness()
    await cache.remember('k', { ttlSeconds: 60, tags: ['t'] }, loader(1))
    const driver = opened.at(-1)?.driver
    await driver?.clear?.()
    expect((await cache.remember('k', ttl, loader(2))).value).toBe(2)
  })
})

describe('cache: memory driver', () => {
  it('keeps within its byte bound by evicting the least recently used entries', async () => {
    const clock = createTestClock()
    const cache = open(createMemoryCacheDriver({ maxBytes: 20_000, clock }))
    const big = (i: number) => ({ i, pad: 'x'.repeat(1_000) })
    for (let i = 0; i < 40; i++)
      await cache.remember(`k${i}`, { ttlSeconds: 60, tags: ['all'] }, loader(big(i)))
    // A TTL of 0 stores nothing, so probing does not refill (and evict) as it goes.
    const hit = async (i: number) => (await cache.remember(`k${i}`, { ttlSeconds: 0 }, loader(big(i)))).hit
    const kept = []
    for (let i = 39; i >= 0; i--) if (await hit(i)) kept.push(i)
    // Only the most recent entries that fit are kept: far fewer than 40 entries of 1 kB in 20 kB.
    expect(kept.length).toBeGreaterThan(10)
    expect(kept.length).toBeLessThan(20)
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, n) => 39 - n))
    // Invalidation after evictions still finds exactly what is left.
    await cache.invalidateTags(['all'])
    for (let i = 39; i >= 0; i--) expect(await hit(i)).toBe(false)
  })

  it('jsonInMemory answers an entry held in memory at once, counted as a hit, and nothing while it loads or after it is dropped', async () => {
    const clock = createTestClock()
    const reads: boolean[] = []
    const driver = createMemoryCacheDriver({ maxBytes: 1024 * 1024, clock })
    const cache = createCache(driver, { onRead: (hit) => reads.push(hit) })
    opened.push({ cache, driver })
    const options = { ttlSeconds: 60, tags: ['markets'] }
    expect(cache.jsonInMemory('k')).toBeUndefined()
    const fn = loader('{"a":1}')
    const release = fn.hold()
    const loading = cache.rememberJson('k', options, fn)
    // A load under way is joined through rememberJson, never overtaken.
    expect(cache.jsonInMemory('k')).toBeUndefined()
    release()
    await loading
    expect(cache.jsonInMemory('k')).toBe('{"a":1}')
    expect(reads).toEqual([false, true])
    clock.advance(61_000)
    expect(cache.jsonInMemory('k')).toBeUndefined()
    await cache.rememberJson('k', options, fn)
    await cache.invalidateTags(['markets'])
    expect(cache.jsonInMemory('k')).toBeUndefined()
    expect(fn.calls).toBe(2)
  })

  it('jsonInMemory never answers an entry past its TTL, nor one due for a refresh until that refresh runs', async () => {
    const clock = createTestClock()
    const cache = open(createMemoryCacheDriver({ maxBytes: 1024 * 1024, clock }))
    const options = { ttlSeconds: 60, staleSeconds: 600, refreshAheadSeconds: 10 }
    await cache.rememberJson('k', options, loader('"old"'))
    expect(cache.jsonInMemory('k', options)).toBe('"old"')
    clock.advance(51_000)
    // Due for a refresh: rememberJson answers it and starts the refresh, then the lane answers again.
    expect(cache.jsonInMemory('k', options)).toBeUndefined()
    const next = loader('"new"')
    const release = next.hold()
    expect(await cache.rememberJson('k', options, next)).toEqual({ value: '"old"', hit: true })
    expect(cache.jsonInMemory('k', options)).toBe('"old"')
    release()
    await sleep(5)
    expect(cache.jsonInMemory('k', options)).toBe('"new"')
    // Past its TTL, kept for grace: only rememberJson may answer it, and only if the load fails.
    clock.advance(61_000)
    expect(cache.jsonInMemory('k', options)).toBeUndefined()
  })

  it('gives a load up after maxLoadMs: the old value is no longer answered for it, and the next caller loads', async () => {
    const clock = createTestClock()
    const cache = open(createMemoryCacheDriver({ maxBytes: 1024 * 1024, clock }), clock)
    const options = { ttlSeconds: 60, staleSeconds: 600, maxLoadMs: 5_000, refreshAheadSeconds: 10 }
    await cache.remember('load', options, loader('old'))
    await cache.remember('refresh', options, loader('old'))
    clock.advance(51_000)
    const hung = loader('never')
    hung.hold()
    // A refresh that never lands: past maxLoadMs a due hit starts the next one.
    expect(await cache.remember('refresh', options, hung)).toMatchObject({ value: 'old', hit: true })
    clock.advance(4_000)
    expect(await cache.remember('refresh', options, loader('unused'))).toMatchObject({ hit: true })
    clock.advance(1_000)
    const next = loader('new')
    expect(await cache.remember('refresh', options, next)).toMatchObject({ value: 'old', hit: true })
    await eventuallyPasses(() => expect(next.calls).toBe(1))
    // A load that never lands, past the TTL: the old value while it runs, then the next caller loads.
    clock.advance(5_000)
    void cache.remember('load', options, hung)
    expect(await cache.remember('load', options, loader('unused'))).toMatchObject({
      value: 'old',
      stale: { reason: REVALIDATING },
    })
    clock.advance(5_000)
    expect(await cache.remember('load', options, loader('new'))).toEqual({
      value: 'new',
      hit: false,
      expired: true,
    })
  })

  it('runs at most 1,000 refreshes at once: a due hit past that starts none', async () => {
    const clock = createTestClock()
    const cache = open(createMemoryCacheDriver({ maxBytes: 16 * 1024 * 1024, clock }), clock)
    const options = { ttlSeconds: 60, refreshAheadSeconds: 10 }
    for (let i = 0; i <= 1_000; i++) await cache.remember(`k${i}`, options, loader(i))
    clock.advance(55_000)
    const next = loader('new')
    const release = next.hold()
    for (let i = 0; i <= 1_000; i++) expect((await cache.remember(`k${i}`, options, next)).hit).toBe(true)
    await eventuallyPasses(() => expect(next.calls).toBe(1_000))
    await sleep(10)
    expect(next.calls).toBe(1_000)
    release()
  })

  it('does not store an entry larger than the whole bound', async () => {
    const cache = open(createMemoryCacheDriver({ maxBytes: 2_000, clock: createTestClock() }))
    const fn = loader('y'.repeat(5_000))
    await cache.remember('huge', ttl, fn)
    await cache.remember('huge', ttl, fn)
    expect(fn.calls).toBe(2)
  })
})

describe('cache: a failing store', () => {
  it('degrades to misses and reports, so answers still come', async () => {
    // A real client to a port nothing listens on, failing fast instead of queueing.
    const dead = new Redis({ port: 1, host: '127.0.0.1', lazyConnect: true, enableOfflineQueue: false })
    dead.on('error', () => {})
    const errors: string[] = []
    const cache = createCache(createRedisCacheDriver(dead), {
      onError: (_e, operation) => errors.push(operation),
    })
    const fn = loader({ ok: true })
    expect(await cache.remember('k', { ttlSeconds: 60, tags: ['t'] }, fn)).toEqual({
      value: { ok: true },
      hit: false,
    })
    expect(await cache.remember('k', ttl, fn)).toEqual({ value: { ok: true }, hit: false })
    await cache.invalidateTags(['t'])
    expect(fn.calls).toBe(2)
    expect(errors).toEqual(expect.arrayContaining(['get', 'set', 'invalidate']))
    await cache.close()
    dead.disconnect()
  })
})

// Only with a Redis to share (CI's PostgreSQL + Redis run); defined, not skipped, when there is one.
if (redisUrl)
  describe('cache: several instances over one Redis', () => {
    function twoInstances() {
      const prefix = `test:${randomBytes(6).toString('hex')}:`
      return [
        open(createRedisCacheDriver(redisClient(prefix))),
        open(createRedisCacheDriver(redisClient(prefix))),
      ]
    }

    it('an entry stored through one instance is a hit on the other; invalidation through either makes both miss at once', async () => {
      const [a, b] = twoInstances() as [Cache, Cache]
      const fn = loader(['strategy 1'])
      await a.remember('user:1:strategies', { ttlSeconds: 60, tags: ['user:1'] }, fn)
      expect((await b.remember('user:1:strategies', { ttlSeconds: 60, tags: ['user:1'] }, fn)).hit).toBe(true)
      // A shared entry is never answered from one instance's memory: another may drop it any time.
      expect(a.jsonInMemory('user:1:strategies')).toBeUndefined()
      await b.invalidateTags(['user:1'])
      expect((await a.remember('user:1:strategies', { ttlSeconds: 60, tags: ['user:1'] }, fn)).hit).toBe(
        false,
      )
      expect(fn.calls).toBe(2)
    })

    /** Instances as the app makes them over Redis: the shared driver, the outage memory and the near copies. */
    function twoAppInstances() {
      const prefix = `test:${randomBytes(6).toString('hex')}:`
      const up = { isUp: () => true, failed: () => {}, onReturn: () => () => {} }
      const instance = () => {
        const memory = () => createMemoryCacheDriver({ maxBytes: 1024 * 1024 })
        return open(
          createFailoverCacheDriver(createRedisCacheDriver(redisClient(prefix)), memory(), up, memory()),
        )
      }
      return [instance(), instance()] as const
    }

    it('an entry stored without tags is answered from each instance’s memory once read there, until its TTL', async () => {
      const [a, b] = twoAppInstances()
      const fn = loader('markets')
      await a.rememberJson('markets', { ttlSeconds: 1 }, fn)
      // Stored through a: a holds it; b reads it from Redis once, then holds it too.
      expect(a.jsonInMemory('markets')).toBe('markets')
      expect(b.jsonInMemory('markets')).toBeUndefined()
      expect(await b.rememberJson('markets', { ttlSeconds: 1 }, fn)).toEqual({ value: 'markets', hit: true })
      expect(b.jsonInMemory('markets')).toBe('markets')
      expect(fn.calls).toBe(1)
      await sleep(1100)
      expect(a.jsonInMemory('markets')).toBeUndefined()
      expect(b.jsonInMemory('markets')).toBeUndefined()
    })

    it('an entry stored under tags is never answered from memory: another instance’s write is seen at once', async () => {
      const [a, b] = twoAppInstances()
      const options = { ttlSeconds: 60, tags: ['user:1'] }
      await a.rememberJson('user:1:strategies', options, loader('before'))
      expect((await b.rememberJson('user:1:strategies', options, loader('unused'))).hit).toBe(true)
      expect(a.jsonInMemory('user:1:strategies')).toBeUndefined()
      expect(b.jsonInMemory('user:1:strategies')).toBeUndefined()
      await a.invalidateTags(['user:1'])
      expect(await b.rememberJson('user:1:strategies', options, loader('after'))).toEqual({
        value: 'after',
        hit: false,
      })
    })

    it('an entry past its TTL is loaded by one instance at a time: the other answers the old value meanwhile', async () => {
      const [a, b] = twoInstances() as [Cache, Cache]
      const options = { ttlSeconds: 0.3, staleSeconds: 60 }
      await a.remember('k', options, loader('old'))
      await sleep(400)
      const next = loader('new')
      const release = next.hold()
      const loading = a.remember('k', options, next)
      await eventuallyPasses(() => expect(next.calls).toBe(1))
      const other = loader('unused')
      expect(await b.remember('k', options, other)).toMatchObject({
        value: 'old',
        hit: false,
        stale: { reason: REVALIDATING },
      })
      release()
      expect(await loading).toEqual({ value: 'new', hit: false, expired: true })
      expect(other.calls).toBe(0)
      // Given back once landed, failed or not: b's next load of it is b's own.
      await sleep(400)
      const failing = async (): Promise<string> => {
        throw new Error('upstream 404')
      }
      await expect(a.remember('k', options, failing)).rejects.toThrow('upstream 404')
      expect(await b.remember('k', options, loader('newer'))).toEqual({
        value: 'newer',
        hit: false,
        expired: true,
      })
    })

    it('a claim its instance never gives back lapses after its time', async () => {
      const prefix = `test:${randomBytes(6).toString('hex')}:`
      const gone = createRedisCacheDriver(redisClient(prefix))
      const cache = open(createRedisCacheDriver(redisClient(prefix)))
      const options = { ttlSeconds: 0.3, staleSeconds: 60 }
      await cache.remember('k', options, loader('old'))
      await sleep(400)
      expect(await gone.claimLoad?.('k', 300)).toBeInstanceOf(Function)
      const next = loader('new')
      expect(await cache.remember('k', options, next)).toMatchObject({ stale: { reason: REVALIDATING } })
      await sleep(350)
      expect(await cache.remember('k', options, next)).toEqual({ value: 'new', hit: false, expired: true })
      await gone.close()
    })

    it('a load running on one instance while another invalidates its tag is not stored', async () => {
      const [a, b] = twoInstances() as [Cache, Cache]
      const stale = loader('read before the write')
      const release = stale.hold()
      const running = a.remember('user:1:strategies', { ttlSeconds: 60, tags: ['user:1'] }, stale)
      await sleep(20)
      await b.invalidateTags(['user:1'])
      release()
      expect((await running).value).toBe('read before the write')
      const fresh = loader('read after the write')
      expect(await b.remember('user:1:strategies', { ttlSeconds: 60, tags: ['user:1'] }, fresh)).toEqual({
        value: 'read after the write',
        hit: false,
      })
    })

    it('an invalidation on one instance detaches the other instance’s running load from later callers', async () => {
      const [a, b] = twoInstances() as [Cache, Cache]
      await sleep(50) // let a's subscription settle
      const stale = loader('before')
      const release = stale.hold()
      const running = a.remember('k', { ttlSeconds: 60, tags: ['user:9'] }, stale)
      await sleep(20)
      await b.invalidateTags(['user:9'])
      await sleep(50) // the announcement travels through Redis pub/sub
      const fresh = loader('after')
      const failSafe = setTimeout(release, 1000) // a wrongly joined call fails fast instead of hanging
      expect((await a.remember('k', { ttlSeconds: 60, tags: ['user:9'] }, fresh)).value).toBe('after')
      clearTimeout(failSafe)
      release()
      await running
    })
  })
