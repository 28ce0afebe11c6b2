import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import type { HeaderPairs } from '../lib/answer-headers.ts'
import { unixSeconds } from '../lib/clock.ts'
import { type HttpError, tooManyAttempts } from '../lib/errors.ts'
import { NETWORK_LIMIT_MULTIPLE } from '../lib/rate-limit/address.ts'
import { createFailoverRateLimitStore } from '../lib/rate-limit/failover.ts'
import { createMemoryRateLimitStore } from '../lib/rate-limit/memory.ts'
import { createRedisRateLimitStore } from '../lib/rate-limit/redis.ts'
import type { RateLimitWindow } from '../lib/rate-limit/store.ts'
import { redisAvailability } from '../lib/redis/health.ts'
import type { ThrottleRule, ThrottleSubject } from './guards.ts'

/** Counters a route keeps by itself (failures only, lockouts), under `name`; keys are hashed as the rules' are. */
export interface RateLimitCounters {
  hit(name: string, key: string, decaySeconds: number): RateLimitWindow | Promise<RateLimitWindow>
  peek(name: string, key: string): Promise<RateLimitWindow | null>
  clear(name: string, key: string): Promise<void>
}

export interface RateLimiter {
  /**
   * Counts the attempt; past the limit throws Laravel's 429, otherwise sets the X-RateLimit headers
   * (when given the reply: a second rule of a route leaves the first one's headers alone). With the
   * in-process store this is decided at once (undefined, or the 429 thrown): no promise per request.
   * A rule with a network key counts the client's /48 too, for the attempts its /64 let through.
   * The subject is a request, or what a caller outside one (an AI tool) counts for.
   */
  enforce(rule: ThrottleRule, request: ThrottleSubject, reply?: FastifyReply): Promise<void> | undefined
  /**
   * The warm-read lane's count (plugins/warm-reads.ts): within the limit, counts the attempt and
   * answers its X-RateLimit headers; past it, gives the attempt back and answers undefined, and the
   * request goes the usual way (through `enforce`, which answers the 429 from the same count). At
   * once with the in-process store; with Redis, when the count's round trip returns.
   */
  countForLane(
    rule: ThrottleRule,
    subject: ThrottleSubject,
  ): HeaderPairs | undefined | Promise<HeaderPairs | undefined>
  /** Gives back the attempt `enforce` counted, for a rule that counts failures only (a login that succeeded). */
  refund(rule: ThrottleRule, request: ThrottleSubject): Promise<void>
  /** Laravel's 429 for a limit of `max` whose window ends at `resetAt` (unix seconds), with Retry-After. */
  tooManyAttempts(max: number, resetAt: number): HttpError
  readonly counters: RateLimitCounters
}

declare module 'fastify' {
  interface FastifyInstance {
    rateLimiter: RateLimiter
  }
}

const USER_ID = /^\d{1,15}$/

async function rateLimitPlugin(app: FastifyInstance) {
  // Made either way (an empty Map); counted in without Redis, and while Redis does not answer.
  const inProcess = createMemoryRateLimitStore(app.clock)
  const store = app.redis
    ? createFailoverRateLimitStore(
        createRedisRateLimitStore(app.redis, app.clock),
        inProcess,
        redisAvailability(app.dependencyHealth, app.log, 'rate limit'),
      )
    : inProcess

  // Keys hold emails and addresses: hashed, they are short and reveal nothing in Redis. A user id is
  // both already (and the key of the per-request read limit): used as it is, no hash per request.
  const storeKey = (name: string, key: string) =>
    USER_ID.test(key) ? `${name}:${key}` : `${name}:${createHash('sha1').update(key).digest('hex')}`
  const refusal = (max: number, resetAt: number) =>
    tooManyAttempts({
      'retry-after': String(Math.max(1, resetAt - unixSeconds(app.clock))),
      'x-ratelimit-limit': String(max),
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(resetAt),
    })

  /** What a limit leaves: its max and the attempts still allowed. */
  type Left = { max: number; remaining: number }
  const limitHeaders = ({ max, remaining }: Left): HeaderPairs => [
    ['x-ratelimit-limit', String(max)],
    ['x-ratelimit-remaining', String(remaining)],
  ]
  /** The 429 past `max`, else what the window leaves. */
  const judge = (max: number, { attempts, resetAt }: RateLimitWindow): Left => {
    if (attempts > max) throw refusal(max, resetAt)
    return { max, remaining: max - attempts }
  }
  const send = (left: Left, reply: FastifyReply | undefined): undefined => {
    if (reply) for (const [name, value] of limitHeaders(left)) reply.header(name, value)
    return undefined
  }
  const networkName = (rule: ThrottleRule) => `${rule.name}:network`

  app.decorate('rateLimiter', {
    enforce(rule, request, reply) {
      const network = rule.networkKey?.(request)
      const counted = (window: RateLimitWindow): Promise<void> | undefined => {
        const left = judge(rule.max, window)
        if (network === undefined) return send(left, reply)
        // The /48 counts only what its /64 let through: one /64 cannot use up its neighbours' share.
        // The headers say the tighter of the two limits.
        const both = (networkWindow: RateLimitWindow) => {
          const networkLeft = judge(rule.max * NETWORK_LIMIT_MULTIPLE, networkWindow)
          return send(networkLeft.remaining < left.remaining ? networkLeft : left, reply)
        }
        const networkWindow = store.hit(storeKey(networkName(rule), network), rule.decaySeconds)
        return networkWindow instanceof Promise ? networkWindow.then(both) : both(networkWindow)
      }
      const window = store.hit(storeKey(rule.name, rule.key(request)), rule.decaySeconds)
      return window instanceof Promise ? window.then(counted) : counted(window)
    },
    countForLane(rule, subject) {
      // The lane's reads are counted per user; a rule with a wider count goes the usual way.
      if (rule.networkKey?.(subject) !== undefined) return undefined
      const key = storeKey(rule.name, rule.key(subject))
      if (store === inProcess) {
        const { attempts } = inProcess.hit(key, rule.decaySeconds)
        if (attempts <= rule.max) return limitHeaders({ max: rule.max, remaining: rule.max - attempts })
        // Given back, so that `enforce` counting it again answers the 429 from the same count.
        inProcess.refundNow(key)
        return undefined
      }
      return Promise.resolve(store.hit(key, rule.decaySeconds)).then(async ({ attempts }) => {
        if (attempts <= rule.max) return limitHeaders({ max: rule.max, remaining: rule.max - attempts })
        await store.refund(key)
        return undefined
      })
    },
    async refund(rule, request) {
      await store.refund(storeKey(rule.name, rule.key(request)))
      const network = rule.networkKey?.(request)
      if (network !== undefined) await store.refund(storeKey(networkName(rule), network))
    },
    tooManyAttempts: refusal,
    counters: {
      hit: (name, key, decaySeconds) => store.hit(storeKey(name, key), decaySeconds),
      peek: (name, key) => store.peek(storeKey(name, key)),
      clear: (name, key) => store.clear(storeKey(name, key)),
    },
  } satisfies RateLimiter)
}

export default fp(rateLimitPlugin, {
  name: 'rate-limit',
  dependencies: ['clock', 'redis', 'dependency-health'],
})
