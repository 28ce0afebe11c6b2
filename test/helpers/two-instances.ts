import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { buildTestApp, type TestApp } from './build-test-app.ts'

/**
 * Two app instances as a multi-instance deployment runs them: one database, one Redis (`redisUrl`)
 * under a key space of this call's own (parallel test files sharing the Redis are left alone),
 * both built with `env`. Closes both and deletes the keys afterwards, whatever `use` did.
 */
export async function withTwoInstances(
  redisUrl: string,
  env: Record<string, string>,
  use: (a: TestApp, b: TestApp) => Promise<void>,
): Promise<void> {
  const keyPrefix = `test:${randomBytes(4).toString('hex')}:`
  const connect = () => new Redis(redisUrl, { keyPrefix })
  const a = await buildTestApp({ env, redis: connect() })
  const b = await buildTestApp({ env, redis: connect(), database: a.database })
  const cleaner = connect()
  try {
    await use(a, b)
  } finally {
    // b shares a's database, which closing an app closes: b first, then a.
    await b.app.close().catch(() => {})
    await a.close()
    const keys = await cleaner.keys(`${keyPrefix}*`)
    if (keys.length > 0) await cleaner.del(...keys.map((key) => key.slice(keyPrefix.length)))
    await cleaner.quit()
  }
}
