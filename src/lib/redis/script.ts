import type { Redis } from 'ioredis'

type Argument = string | number | Buffer

/** A Lua script run by its SHA1 (EVALSHA, EVAL once when Redis does not know it yet): `keys` first, then `args`. */
export type RedisScript = (keys: readonly string[], args?: readonly Argument[]) => Promise<unknown>

/**
 * `lua` as a command of `redis` (ioredis's defineCommand): each call sends the script's SHA1 rather
 * than its text, so Redis neither receives nor hashes the text per call. The client's key prefix
 * applies to the keys.
 */
export function defineScript(redis: Redis, name: string, lua: string): RedisScript {
  redis.defineCommand(name, { lua })
  const command = (redis as unknown as Record<string, (...args: Argument[]) => Promise<unknown>>)[name]
  if (typeof command !== 'function') throw new Error(`Redis script ${name} was not defined`)
  return (keys, args = []) => command.call(redis, keys.length, ...keys, ...args)
}
