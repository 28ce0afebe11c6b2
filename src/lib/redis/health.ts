import type { Redis } from 'ioredis'
import type { DependencyHealth } from '../dependency-health.ts'

// Errors Redis answers for its own state (loading, out of memory, a replica), not for our command.
const REDIS_STATE_REPLIES = /^(LOADING|OOM|READONLY|MASTERDOWN|BUSY|MISCONF|TRYAGAIN|NOREPLICAS)\b/
// While Redis is down, how often it is asked whether it is back (a hung one gives no `ready`).
const PROBE_EVERY_MS = 1000

/**
 * Whether a failed command says Redis is unavailable (no connection, a time-out, Redis loading or
 * out of memory), rather than that the command was wrong (a script error, a wrong type: ours).
 */
export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return true
  return REDIS_STATE_REPLIES.test(error.message)
}

/**
 * Reports the client's state to `health`: its errors (raw lines on stderr otherwise) as Redis down,
 * its `ready` as Redis back. While down, a PING each second finds a Redis that answers again
 * without having dropped the connection (one that hung). Answers a function that stops watching.
 */
export function watchRedisHealth(redis: Redis, health: DependencyHealth): () => void {
  redis.on('error', (error: unknown) => health.failed('redis', error))
  redis.on('ready', () => health.succeeded('redis'))
  // Not while reconnecting: its `ready` says so itself.
  return health.probeWhileDown(
    'redis',
    () => (redis.status === 'ready' ? redis.ping() : Promise.reject(new Error('not connected'))),
    PROBE_EVERY_MS,
  )
}

/** Resolves once the client is ready, or has failed once (it keeps reconnecting by itself). */
export function firstConnection(redis: Redis): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve()
  return new Promise((resolve) => {
    const stopWaiting = () => {
      redis.off('ready', stopWaiting)
      redis.off('error', stopWaiting)
      resolve()
    }
    redis.once('ready', stopWaiting)
    redis.once('error', stopWaiting)
  })
}

/** What a use of Redis that can do without it (throttles, the cache) follows of Redis's state. */
export interface RedisAvailability {
  /** Whether Redis is taken to answer (while it is not, it is not asked at all). */
  isUp(): boolean
  /** Told of each command that failed (and was answered without Redis instead). */
  failed(error: unknown): void
  /** Called each time Redis comes back; answers a function that stops it. */
  onReturn(listener: () => void): () => void
}

/**
 * Redis's state for one use (named `use` in the log): a failure for Redis's own reason marks it down
 * (one log line for all uses, lib/dependency-health.ts); any other is a bug of ours, logged each time.
 */
export function redisAvailability(
  health: DependencyHealth,
  log: { error(details: object, message: string): void },
  use: string,
): RedisAvailability {
  return {
    isUp: () => health.isUp('redis'),
    failed(error) {
      if (isRedisOutage(error)) health.failed('redis', error)
      else log.error({ err: error }, `${use}: redis command failed`)
    },
    onReturn: (listener) =>
      health.onChange((dependency, up) => {
        if (dependency === 'redis' && up) listener()
      }),
  }
}
