import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { type AppOverrides, buildApp } from '../../src/app.ts'
import { type Config, loadConfig } from '../../src/config.ts'
import type { Database } from '../../src/db/client.ts'
import type { Clock } from '../../src/lib/clock.ts'
import { createTestClock } from './clock.ts'
import { openTestDatabase } from './test-database.ts'

export const TEST_APP_KEY = 'base64:dGVzdC1hcHAta2V5LXRlc3QtYXBwLWtleS10ZXN0LWE='
export const SPA_ORIGIN = 'http://spa.test:5173'

export interface TestApp {
  app: FastifyInstance
  baseUrl: string
  config: Config
  database: Database
  clock: Clock & { advance(ms: number): void }
  close(): Promise<void>
}

export interface TestAppOptions {
  env?: Record<string, string>
  database?: Database
  /** A client of the test's own; left out, none, or the app's own when `env` has REDIS_URL. */
  redis?: Redis | null
  loggerInstance?: AppOverrides['loggerInstance']
  /** A folder of knowledge base articles to sync at start instead of content/knowledge-base/. */
  knowledgeBaseDir?: string
  /** A billing catalogue, or stand-ins for built services (src/services.ts). */
  services?: AppOverrides['services']
  /** Registers test-only routes (to exercise a guard or a failure) before the app starts listening. */
  extend?: (app: FastifyInstance) => void | Promise<void>
  /** The loopback port to listen on (from freePort(), so APP_URL can name it); any free one when left out. */
  port?: number
}

/** Builds a test config: the same loader as production, fed a fixed environment. */
export function testConfig(env: Record<string, string> = {}): Config {
  const dataDir = mkdtempSync(join(tmpdir(), 'trading-api-test-'))
  return loadConfig(
    { NODE_ENV: 'test', APP_KEY: TEST_APP_KEY, DATA_DIR: dataDir, FRONTEND_URL: SPA_ORIGIN, ...env },
    dataDir,
  )
}

/** The whole app on a fresh database, listening on a loopback port, as the SPA would reach it. */
export async function buildTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const config = testConfig(options.env)
  const database = options.database ?? (await openTestDatabase())
  const clock = createTestClock()
  const app = await buildApp(config, {
    database,
    clock,
    // None unless handed in; with REDIS_URL in `env` and none handed in, the app's own (as in production).
    redis: options.redis ?? (config.redisUrl ? undefined : null),
    loggerInstance: options.loggerInstance,
    knowledgeBaseDir: options.knowledgeBaseDir,
    services: options.services,
  })
  await options.extend?.(app)
  await app.listen({ host: '127.0.0.1', port: options.port ?? 0 })
  const address = app.server.address()
  if (!address || typeof address === 'string') throw new Error('test app did not bind a port')
  return {
    app,
    baseUrl: `http://127.0.0.1:${address.port}`,
    config,
    database,
    clock,
    close: () => app.close(),
  }
}
