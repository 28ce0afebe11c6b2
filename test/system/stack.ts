import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import pg from 'pg'
import { SPA_ORIGIN, TEST_APP_KEY } from '../helpers/build-test-app.ts'
import type { CliResult } from '../helpers/cli.ts'
import { TestClient } from '../helpers/client.ts'
import { uniqueEmail } from '../helpers/factories.ts'
import { FakeModel } from '../helpers/fake-model.ts'
import { FakeUpstream } from '../helpers/fake-upstream.ts'
import { freePort } from '../helpers/ports.ts'
import { projectRoot } from '../helpers/project-root.ts'
import { SmtpSink } from '../helpers/smtp-sink.ts'
import { createServerDatabase, type ServerDatabase } from '../helpers/test-database.ts'
import { type RunningNginx, startNginx } from './nginx.ts'
import { type RunningPgBouncer, startPgBouncer } from './pgbouncer.ts'
import { type Instance, instance, runCli } from './processes.ts'

export const SUPPORT_EMAIL = 'support@system.test'
/** The password of every trader a system test registers. */
export const TRADER_PASSWORD = 'correct horse battery staple'
export const ADMIN = { email: 'admin@system.test', password: 'system admin password' }
export const REVERB = { appId: '515151', key: 'system-app-key', secret: 'system-app-secret-0123456789' }

export interface StackOptions {
  /** The instances reach PostgreSQL through a PgBouncer in transaction mode the stack starts. */
  viaPgBouncer: boolean
  /** The PostgreSQL server the database is made on (default TEST_DATABASE_URL): a fault test's own. */
  databaseServerUrl?: string
  /** The Redis both instances share (default TEST_REDIS_URL): a fault test's own. */
  redisUrl?: string
  /** More settings for both instances, over the recipe's (a fault test's shorter time-outs). */
  env?: Record<string, string>
  /** The prefix of this run's Redis keys, all deleted at the stop (default `system-<hex>:`). */
  redisPrefix?: string
  /**
   * `ignore`: the instances' stdout (their log, an access line per request) goes to /dev/null, for a
   * load (a bench) that would otherwise pile it up in this process; `logs()` then has their stderr.
   */
  instanceStdout?: 'pipe' | 'ignore'
}

/** What the release step printed, for the test to check. */
export interface ReleaseStep {
  /** DATABASE_POOLER=transaction through PgBouncer, before migrating: refused (PgBouncer runs only). */
  throughPooler?: CliResult
  migrate: CliResult
  createAdmin: CliResult
}

export interface Stack {
  readonly nginx: RunningNginx
  readonly instances: readonly [Instance, Instance]
  readonly upstream: FakeUpstream
  readonly model: FakeModel
  readonly smtp: SmtpSink
  readonly release: ReleaseStep
  /** The environment both instances were started with (each adds PORT and DATA_DIR). */
  readonly env: Readonly<Record<string, string>>
  readonly realtimeKey: string
  /** A query on the PostgreSQL database directly (not through PgBouncer), for checks. */
  sql<T extends pg.QueryResultRow>(text: string): Promise<T[]>
  /** nginx's and every instance's output, for failure messages. */
  logs(): string
  stop(): Promise<void>
}

const migrationCount = () =>
  (
    JSON.parse(readFileSync(join(projectRoot, 'drizzle/meta/_journal.json'), 'utf8')) as {
      entries: unknown[]
    }
  ).entries.length

export { migrationCount }

/** An instance's output but its access-log lines (one per request): what it had to say. */
const withoutAccessLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => !line.includes('"msg":"request completed"'))
    .join('\n')

/**
 * The deployment the recipe describes, on this machine: a fresh PostgreSQL database migrated once by
 * the release step, one Redis (keys under a prefix of this run's own), the fake upstream, the fake
 * model and an SMTP sink, two instances (NODE_ENV=production) and nginx in front of them rendered
 * from deploy/; optionally PgBouncer between the instances and PostgreSQL.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const serverUrl =
    options.databaseServerUrl ??
    process.env.TEST_DATABASE_URL ??
    'postgres://postgres@127.0.0.1:5432/postgres'
  const redisUrl = options.redisUrl ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const redisPrefix = options.redisPrefix ?? `system-${randomBytes(4).toString('hex')}:`
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-system-'))
  const cleanups: Array<() => Promise<unknown> | unknown> = [
    () => rmSync(dir, { recursive: true, force: true }),
  ]
  const cleanup = async () => {
    for (const step of cleanups.splice(0).reverse()) await Promise.resolve(step()).catch(() => {})
  }
  // Runs after the instances have stopped (cleanups run last first): this run's keys, gone.
  cleanups.push(async () => {
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null })
    redis.on('error', () => {}) // a fault test may have left its own Redis stopped
    try {
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000)
        cursor = next
        if (keys.length > 0) await redis.del(...keys)
      } while (cursor !== '0')
    } finally {
      redis.disconnect()
    }
  })
  try {
    const database: ServerDatabase = await createServerDatabase(serverUrl)
    cleanups.push(() => database.drop())
    const [upstream, model, smtp] = await Promise.all([
      new FakeUpstream().start(),
      new FakeModel().start(),
      new SmtpSink().start(),
    ])
    cleanups.push(
      () => upstream.stop(),
      () => model.stop(),
      () => smtp.stop(),
    )
    const [nginxPort, portA, portB, bouncerPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ])
    let bouncer: RunningPgBouncer | undefined
    if (options.viaPgBouncer) {
      bouncer = await startPgBouncer(serverUrl, bouncerPort)
      cleanups.push(() => bouncer?.stop())
    }

    // What deploy/instance.env.example lists, filled in for this machine.
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      APP_URL: `http://127.0.0.1:${nginxPort}`,
      APP_KEY: TEST_APP_KEY,
      FRONTEND_URL: SPA_ORIGIN,
      TRUSTED_PROXIES: '127.0.0.1',
      DATABASE_URL: bouncer ? bouncer.via(database.url) : database.url,
      DATABASE_POOLER: bouncer ? 'transaction' : 'none',
      DATABASE_POOL_SIZE: '10',
      REDIS_URL: redisUrl,
      REDIS_PREFIX: redisPrefix,
      MAIL_URL: smtp.url,
      MAIL_FROM: 'Trading App <no-reply@system.test>',
      SUPPORT_EMAIL,
      UPSTREAM_BASE_URL: upstream.url,
      UPSTREAM_API_TOKEN: 'system-upstream-token',
      AI_BASE_URL: model.url,
      AI_API_KEY: 'system-model-key',
      AI_MODEL: 'fake-model',
      REVERB_APP_ID: REVERB.appId,
      REVERB_APP_KEY: REVERB.key,
      REVERB_APP_SECRET: REVERB.secret,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      ...options.env,
    }

    // The release step, once, before any instance starts: migrations straight to PostgreSQL.
    const release: ReleaseStep = {
      throughPooler: bouncer ? await runCli(['migrate'], env, dir) : undefined,
      migrate: await runCli(
        ['migrate'],
        { ...env, DATABASE_URL: database.url, DATABASE_POOLER: 'none' },
        dir,
      ),
      createAdmin: { code: -1, stdout: '', stderr: '' },
    }
    if (release.migrate.code !== 0) throw new Error(`migrate failed:\n${release.migrate.stderr}`)
    release.createAdmin = await runCli(
      [
        'users:create',
        '--name',
        'Admin',
        '--email',
        ADMIN.email,
        '--password',
        ADMIN.password,
        '--admin',
        '--verified',
      ],
      env,
      dir,
    )

    const output = { stdout: options.instanceStdout }
    const a = instance('A', portA, { ...env, DATA_DIR: join(dir, 'a') }, join(dir, 'a'), output)
    const b = instance('B', portB, { ...env, DATA_DIR: join(dir, 'b') }, join(dir, 'b'), output)
    cleanups.push(
      () => a.kill(),
      () => b.kill(),
    )
    await Promise.all([a.start(), b.start()])
    const nginx = await startNginx({
      dir: join(dir, 'nginx'),
      port: nginxPort,
      instances: [a.address, b.address],
    })
    cleanups.push(() => nginx.stop())

    return {
      nginx,
      instances: [a, b],
      upstream,
      model,
      smtp,
      release,
      env,
      realtimeKey: REVERB.key,
      async sql<T extends pg.QueryResultRow>(text: string) {
        const client = new pg.Client({ connectionString: database.url })
        await client.connect()
        try {
          return (await client.query<T>(text)).rows
        } finally {
          await client.end()
        }
      },
      logs: () =>
        [
          `--- nginx error log\n${nginx.errorLog()}`,
          `--- instance A\n${withoutAccessLines(a.output()).slice(-6000)}`,
          `--- instance B\n${withoutAccessLines(b.output()).slice(-6000)}`,
          bouncer ? `--- pgbouncer\n${bouncer.log().slice(-4000)}` : '',
        ].join('\n'),
      stop: cleanup,
    }
  } catch (error) {
    await cleanup()
    throw error
  }
}

/** A new user registered through `baseUrl` (nginx), as the app registers; the client is signed in as them. */
export async function registeredAt(baseUrl: string, name: string, emailPrefix: string) {
  const client = new TestClient(baseUrl)
  const email = uniqueEmail(emailPrefix)
  const res = await client.post('/api/register', {
    name,
    email,
    password: TRADER_PASSWORD,
    password_confirmation: TRADER_PASSWORD,
  })
  if (res.status !== 201) throw new Error(`register answered ${res.status} ${res.text}`)
  return { client, id: res.data.id as number, email }
}
