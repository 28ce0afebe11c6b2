import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { join, resolve } from 'node:path'
import { parse as parseDotenv } from 'dotenv'
import { type Static, Type } from 'typebox'
import { type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS } from './db/timeouts.ts'
import { compileValidator } from './lib/validation.ts'

/** The environment this service reads, as strings; every variable is documented in docs/configuration.md. */
const Env = Type.Object({
  NODE_ENV: Type.Optional(Type.String()),
  PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  SHUTDOWN_GRACE_MS: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  SHUTDOWN_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  HTTP_REQUEST_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  HTTP_HEADERS_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  APP_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  APP_KEY: Type.Optional(Type.String({ pattern: '^base64:[A-Za-z0-9+/]{43}=$' })),
  DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATABASE_POOL_SIZE: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  DATABASE_POOLER: Type.Optional(Type.String({ pattern: '^(none|transaction)$' })),
  DATABASE_STATEMENT_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  DATABASE_LOCK_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  DATABASE_POOL_WAIT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  DATABASE_LONG_STATEMENT_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,7}$' })),
  REQUEST_DEADLINE_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  REDIS_PREFIX: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,64}$' })),
  REDIS_COMMAND_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  FRONTEND_URL: Type.Optional(Type.String()),
  SESSION_LIFETIME: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  SESSION_ABSOLUTE_LIFETIME: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  SESSION_SECURE_COOKIE: Type.Optional(Type.String({ pattern: '^(true|false|1|0|)$' })),
  // A host name, optionally with Laravel's leading dot (`.example.com`).
  SESSION_DOMAIN: Type.Optional(
    Type.String({
      maxLength: 253,
      pattern: '^\\.?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$',
    }),
  ),
  REMEMBER_LIFETIME: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  TRUSTED_PROXIES: Type.Optional(Type.String({ maxLength: 4096 })),
  MAIL_URL: Type.Optional(Type.String({ pattern: '^smtps?://' })),
  OUTBOX_RETENTION_DAYS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$' })),
  MAIL_FROM: Type.Optional(Type.String({ minLength: 3 })),
  LOG_LEVEL: Type.Optional(Type.String({ pattern: '^(fatal|error|warn|info|debug|trace|silent)$' })),
  LOG_FORMAT: Type.Optional(Type.String({ pattern: '^(json|pretty)$' })),
  // Visible ASCII, as it travels in a header; long enough not to be guessed.
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16, maxLength: 256, pattern: '^[!-~]*$' })),
  UPSTREAM_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  UPSTREAM_API_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  UPSTREAM_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  UPSTREAM_SIM_PORT: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
  UPSTREAM_BREAKER_FAILURES: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  UPSTREAM_BREAKER_COOLDOWN_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  PROXY_READS_PER_MINUTE: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  PROXY_WRITES_PER_MINUTE: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  CACHE_TTL_SECONDS: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  CACHE_MAX_MB: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  CACHE_STALE_SECONDS: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$' })),
  HOLD_DEFAULT_CREDITS: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}(\\.[0-9]{1,4})?$' })),
  PASSWORD_TIMEOUT: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  STRIPE_SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  STRIPE_WEBHOOK_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  STRIPE_API_BASE: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  SUPPORT_EMAIL: Type.Optional(Type.String({ format: 'email' })),
  REVERB_APP_ID: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' })),
  REVERB_APP_KEY: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,128}$' })),
  REVERB_APP_SECRET: Type.Optional(Type.String({ minLength: 16, maxLength: 256 })),
  REVERB_MAX_CONNECTIONS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  REVERB_APP_ACTIVITY_TIMEOUT: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  REVERB_INSTANCE_TTL_SECONDS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  REVERB_DRAIN_SECONDS: Type.Optional(Type.String({ pattern: '^[0-9]{1,3}(\\.[0-9]{1,3})?$' })),
  REVERB_MAX_CONNECTIONS_PER_ADDRESS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  REVERB_MAX_CHANNELS_PER_CONNECTION: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,4}$' })),
  REVERB_APP_RATE_LIMIT_MAX_ATTEMPTS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  REVERB_APP_RATE_LIMIT_DECAY_SECONDS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  REVERB_MAX_BUFFERED_KB: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  REVERB_ALLOWED_ORIGINS: Type.Optional(Type.String({ maxLength: 4096 })),
  APP_EDITION: Type.Optional(Type.String({ pattern: '^(standard|pro)$' })),
  AI_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  AI_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  AI_MODEL: Type.Optional(Type.String({ minLength: 1, maxLength: 191 })),
  AI_TIMEOUT_MS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,6}$' })),
  AI_JOB_ATTEMPTS: Type.Optional(Type.String({ pattern: '^[1-9][0-9]?$' })),
  AI_JOB_RETRY_MS: Type.Optional(Type.String({ pattern: '^[0-9]{1,7}$' })),
  STORAGE_DRIVER: Type.Optional(Type.String()),
  S3_BUCKET: Type.Optional(Type.String({ pattern: '^[^\\s/]{1,255}$' })),
  S3_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
  S3_REGION: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$' })),
  S3_ACCESS_KEY_ID: Type.Optional(Type.String({ minLength: 1 })),
  S3_SECRET_ACCESS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  S3_FORCE_PATH_STYLE: Type.Optional(Type.String({ pattern: '^(true|false|1|0|)$' })),
  S3_PREFIX: Type.Optional(
    Type.String({ pattern: '^/?[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*/?$' }),
  ),
})

/** Every variable the loader reads, by name (docs/configuration.md lists each; a test keeps them in step). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(Env.properties))
type Env = Static<typeof Env>

export interface Config {
  readonly env: 'production' | 'development' | 'test'
  readonly host: string
  readonly port: number
  /**
   * A stop (SIGTERM, SIGINT): for `graceMs` the instance still accepts connections while `/up` answers
   * 503 (SHUTDOWN_GRACE_MS); if it has not exited `timeoutMs` after the signal, it gives up with exit
   * code 1 (SHUTDOWN_TIMEOUT_MS).
   */
  readonly shutdown: { readonly graceMs: number; readonly timeoutMs: number }
  /**
   * The HTTP server's time-outs, in ms: a request's headers and body must arrive within
   * `requestTimeoutMs` (its headers within `headersTimeoutMs`), and a kept-alive connection idle for
   * `keepAliveTimeoutMs` is closed. Answers (server-sent events) and WebSockets are not timed.
   */
  readonly http: {
    readonly requestTimeoutMs: number
    readonly headersTimeoutMs: number
    readonly keepAliveTimeoutMs: number
  }
  readonly appUrl: string
  readonly appKey: string
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  /** Connections the PostgreSQL pool opens at most (DATABASE_POOL_SIZE); unused with PGlite. */
  readonly databasePoolSize: number
  /**
   * `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer `pool_mode = transaction`), so
   * nothing may outlive a transaction on a connection: statements go out unnamed and instances do not
   * migrate (DATABASE_POOLER). `none`: PostgreSQL itself (or a session-mode pooler).
   */
  readonly databasePooler: 'none' | 'transaction'
  /**
   * How long PostgreSQL may take, in ms: one statement (`statementMs`), waiting for a lock
   * (`lockMs`), waiting for a connection of the pool (`poolWaitMs`); migrations and the CLI's
   * commands get `longStatementMs` instead of the first two.
   */
  readonly databaseTimeouts: DatabaseTimeouts
  /**
   * How long a request's handler may work before it is given up (REQUEST_DEADLINE_MS): from then on
   * its database work is refused and rolled back, as it is once its client has gone. Below nginx's
   * 30 s read time-out, so nothing is committed after the balancer has answered for it.
   */
  readonly requestDeadlineMs: number
  readonly redisUrl: string | undefined
  /** Put before every key and pub/sub channel, so services sharing a Redis server stay apart. */
  readonly redisPrefix: string
  /** The longest one Redis command may take before its use gives up on it (and goes on without Redis). */
  readonly redisCommandTimeoutMs: number
  readonly frontendOrigins: readonly string[]
  /**
   * `lifetimeMinutes`: idle lifetime (SESSION_LIFETIME); `absoluteLifetimeMinutes`: how long a session
   * lives from its start however active (SESSION_ABSOLUTE_LIFETIME). Secure cookies: SESSION_SECURE_COOKIE
   * when set, else whether APP_URL is https.
   */
  readonly session: {
    readonly lifetimeMinutes: number
    readonly absoluteLifetimeMinutes: number
    readonly secureCookie: boolean
    /**
     * The Domain of the session, XSRF and remember cookies (SESSION_DOMAIN, leading dot dropped):
     * `example.com` shares them with every subdomain (the SPA on app., the API on api.); unset,
     * they belong to the API's host alone.
     */
    readonly domain: string | undefined
    /** How long "remember me" keeps a device signed in, in minutes (REMEMBER_LIFETIME). */
    readonly rememberLifetimeMinutes: number
  }
  /**
   * The load balancers whose X-Forwarded-For (and -Proto, -Host) is believed: addresses, CIDR ranges,
   * or proxy-addr's `loopback`, `linklocal`, `uniquelocal`. Empty: the peer address is the client.
   */
  readonly trustedProxies: readonly string[]
  readonly mail: { readonly url: string | undefined; readonly from: string }
  /** Days a sent outbox row (a delivered mail) is kept before the background prune deletes it. */
  readonly outboxRetentionDays: number
  readonly logLevel: string
  /** Unset: pretty on a terminal outside production, JSON lines otherwise (lib/logging.ts). */
  readonly logFormat: 'json' | 'pretty' | undefined
  /** GET /metrics answers only `Authorization: Bearer <METRICS_TOKEN>`; unset, there is no /metrics. */
  readonly metricsToken: string | undefined
  readonly upstream: {
    /** Unset outside production means: run the built-in simulator (see server.ts). */
    readonly baseUrl: string | undefined
    readonly token: string
    readonly timeoutMs: number
    readonly simulatorPort: number
    /** Proxied reads one user may make a minute, cached or not (PROXY_READS_PER_MINUTE). */
    readonly userReadsPerMinute: number
    /** Proxied strategy and condition writes and actions one user may make a minute (PROXY_WRITES_PER_MINUTE). */
    readonly userWritesPerMinute: number
    /** The circuit breaker: faults in a row that open it, and how long it stays open before a probe. */
    readonly breaker: { readonly failures: number; readonly coolDownMs: number }
  }
  readonly cache: {
    readonly ttlSeconds: number
    /** How long past its TTL a proxied read may still be answered when the upstream fails (grace). */
    readonly staleSeconds: number
    readonly maxBytes: number
  }
  readonly credits: { readonly holdDefault: string }
  /** How long a password confirmation (POST /api/user/confirm-password) lets sensitive actions through. */
  readonly passwordTimeoutSeconds: number
  readonly stripe: {
    readonly secretKey: string | undefined
    readonly webhookSecret: string | undefined
    readonly apiBase: string | undefined
  }
  readonly supportEmail: string
  /** The Pusher-protocol socket (named after Laravel Reverb's settings, so the app's VITE_REVERB_* map across). */
  readonly realtime: {
    readonly appId: string
    readonly key: string
    readonly secret: string
    readonly maxConnections: number
    /** Seconds of silence before a ping; a socket silent for twice this long is closed. */
    readonly activityTimeoutSeconds: number
    /** How long this instance's presence and online records outlive its last heartbeat (Redis). */
    readonly instanceTtlSeconds: number
    /** Over how many seconds a stopping instance closes its sockets, so clients do not reconnect at once. */
    readonly drainSeconds: number
    /** Sockets one client address (an IPv6 /64) may hold on this instance. */
    readonly maxConnectionsPerAddress: number
    readonly maxChannelsPerConnection: number
    /** Frames one socket may send per window; past that they are dropped, answered with 4301. */
    readonly messageRateLimit: { readonly maxAttempts: number; readonly decaySeconds: number }
    /** Bytes queued for one socket before it is closed as not reading (4101). */
    readonly maxBufferedBytes: number
    /** Browser origins whose pages may open a socket (`*`: any); a socket without Origin is taken. */
    readonly allowedOrigins: readonly string[] | '*'
  }
  /** The deployment edition (spec "Versioning"): `pro` gives the trading and assistant agents market tools. */
  readonly edition: 'standard' | 'pro'
  readonly ai: {
    /** The OpenAI-compatible model; all three unset means the built-in offline model. */
    readonly model: { readonly baseUrl: string; readonly apiKey: string; readonly name: string } | null
    /** The longest one model call (a whole agent answer, all its steps) may take. */
    readonly timeoutMs: number
    /** Tries of a chat analysis before it is recorded as failed, and the first retry's delay (it doubles). */
    readonly jobAttempts: number
    readonly jobRetryMs: number
  }
  /** Where uploaded files live (STORAGE_DRIVER): the disk under DATA_DIR, or a bucket every instance shares. */
  readonly storage: { readonly driver: 'local' } | { readonly driver: 's3'; readonly s3: S3Settings }
}

/** An S3-compatible bucket (S3_*), in the shape lib/storage/s3.ts takes. */
export interface S3Settings {
  readonly bucket: string
  /** Unset: AWS itself. */
  readonly endpoint: string | undefined
  readonly region: string
  /** Unset: the AWS SDK's default credential chain (environment, shared profile, instance or task role). */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | undefined
  readonly forcePathStyle: boolean
  /** Folder every key is put under, without leading or trailing slash ('' for none). */
  readonly prefix: string
}

export class ConfigError extends Error {
  readonly problems: string[]
  constructor(problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`)
    this.problems = problems
  }
}

const checkEnv = compileValidator(Env)

/** Reads `.env` (when present) under the process environment, which wins. */
function readEnvironment(source: NodeJS.ProcessEnv, cwd: string): Record<string, string | undefined> {
  const dotenvPath = join(cwd, '.env')
  const fromFile = existsSync(dotenvPath) ? parseDotenv(readFileSync(dotenvPath)) : {}
  return { ...fromFile, ...source }
}

function parseOrigins(value: string | undefined, problems: string[], name = 'FRONTEND_URL'): string[] {
  if (!value) return []
  const origins: string[] = []
  for (const raw of value.split(',')) {
    const item = raw.trim()
    if (!item) continue
    try {
      const url = new URL(item)
      if (url.origin === 'null') throw new Error('opaque')
      origins.push(url.origin)
    } catch {
      problems.push(`${name}: "${item}" is not an http(s) origin such as https://app.example.com`)
    }
  }
  return origins
}

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** TRUSTED_PROXIES: comma-separated addresses, CIDR ranges (10.0.0.0/8, fd00::/8) or proxy-addr's names. */
function parseTrustedProxies(value: string | undefined, problems: string[]): string[] {
  if (!value) return []
  const proxies: string[] = []
  for (const raw of value.split(',')) {
    const item = raw.trim()
    if (!item) continue
    const [address = '', prefix, extra] = item.split('/')
    const family = isIP(address)
    const prefixOk =
      prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32))
    if (PROXY_RANGE_NAMES.has(item) || (family !== 0 && prefixOk && extra === undefined)) proxies.push(item)
    else {
      problems.push(
        `TRUSTED_PROXIES: "${item}" is not an IP address, a CIDR range such as 10.0.0.0/8, or loopback/linklocal/uniquelocal`,
      )
    }
  }
  return proxies
}

/** APP_KEY outside production: generated once, then read back from DATA_DIR so sessions survive restarts. */
function localAppKey(dataDir: string): string {
  const file = join(dataDir, 'app-key')
  if (existsSync(file)) return readFileSync(file, 'utf8').trim()
  mkdirSync(dataDir, { recursive: true })
  const key = generateAppKey()
  writeFileSync(file, `${key}\n`, { mode: 0o600 })
  return key
}

interface ReverbApp {
  appId: string
  key: string
  secret: string
}

/** The socket app's credentials outside production: generated once, then read back from DATA_DIR. */
function localReverbApp(dataDir: string): ReverbApp {
  const file = join(dataDir, 'reverb-app.json')
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as ReverbApp
  mkdirSync(dataDir, { recursive: true })
  const app: ReverbApp = {
    appId: String(100_000 + (randomBytes(4).readUInt32BE() % 900_000)),
    key: randomBytes(10).toString('hex'),
    secret: randomBytes(20).toString('hex'),
  }
  writeFileSync(file, `${JSON.stringify(app)}\n`, { mode: 0o600 })
  return app
}

/** The only reader of process.env: validates it and returns a frozen, typed Config. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const raw = readEnvironment(source, cwd)
  const picked: Record<string, string> = {}
  for (const key of Object.keys(Env.properties)) {
    const value = raw[key]
    if (value !== undefined && value !== '') picked[key] = value
  }
  const problems = Object.entries(checkEnv(picked)).map(([key, messages]) => `${key}: ${messages[0]}`)
  const env = picked as Env
  const nodeEnv = env.NODE_ENV === 'production' || env.NODE_ENV === 'test' ? env.NODE_ENV : 'development'
  const port = Number(env.PORT ?? 8000)
  if (port < 0 || port > 65535) problems.push('PORT: must be a port number from 0 to 65535')
  const shutdown = {
    graceMs: Number(env.SHUTDOWN_GRACE_MS ?? 2_000),
    timeoutMs: Number(env.SHUTDOWN_TIMEOUT_MS ?? 25_000),
  }
  if (shutdown.graceMs >= shutdown.timeoutMs) {
    problems.push('SHUTDOWN_GRACE_MS: must be less than SHUTDOWN_TIMEOUT_MS')
  }
  const http = {
    requestTimeoutMs: Number(env.HTTP_REQUEST_TIMEOUT_MS ?? 30_000),
    headersTimeoutMs: Number(env.HTTP_HEADERS_TIMEOUT_MS ?? 10_000),
    // Fastify's default: longer than nginx's upstream keepalive_timeout (60 s), so nginx closes first.
    keepAliveTimeoutMs: Number(env.HTTP_KEEP_ALIVE_TIMEOUT_MS ?? 72_000),
  }
  // Node refuses a headers time-out longer than the request's (which includes the headers).
  const httpMalformed = problems.some((problem) => problem.startsWith('HTTP_'))
  if (!httpMalformed && http.headersTimeoutMs > http.requestTimeoutMs) {
    problems.push('HTTP_HEADERS_TIMEOUT_MS: must not be more than HTTP_REQUEST_TIMEOUT_MS')
  }
  const frontendOrigins = parseOrigins(env.FRONTEND_URL, problems)
  const trustedProxies = parseTrustedProxies(env.TRUSTED_PROXIES, problems)
  const socketOrigins =
    env.REVERB_ALLOWED_ORIGINS?.trim() === '*'
      ? '*'
      : parseOrigins(env.REVERB_ALLOWED_ORIGINS, problems, 'REVERB_ALLOWED_ORIGINS')
  if (env.DATABASE_POOLER === 'transaction' && !env.DATABASE_URL) {
    problems.push('DATABASE_POOLER: transaction needs DATABASE_URL (the pooler); PGlite has none')
  }
  if (nodeEnv === 'production' && !env.APP_KEY) {
    problems.push(
      'APP_KEY: required when NODE_ENV=production (generate one with `npm run cli -- key:generate`)',
    )
  }
  if (nodeEnv === 'production' && !env.UPSTREAM_BASE_URL) {
    problems.push(
      'UPSTREAM_BASE_URL: required when NODE_ENV=production (the built-in simulator runs only outside production)',
    )
  }
  // The database refuses a hold of 0 credits (credit_holds_amount_positive).
  if (env.HOLD_DEFAULT_CREDITS !== undefined && Number(env.HOLD_DEFAULT_CREDITS) <= 0) {
    problems.push('HOLD_DEFAULT_CREDITS: must be greater than 0')
  }
  if (nodeEnv === 'production') {
    for (const name of ['REVERB_APP_ID', 'REVERB_APP_KEY', 'REVERB_APP_SECRET'] as const) {
      if (!env[name]) problems.push(`${name}: required when NODE_ENV=production`)
    }
  }
  const aiSettings = [env.AI_BASE_URL, env.AI_API_KEY, env.AI_MODEL].filter((value) => value !== undefined)
  if (aiSettings.length !== 0 && aiSettings.length !== 3) {
    problems.push(
      'AI_BASE_URL, AI_API_KEY, AI_MODEL: set all three for a model server, or none for the offline model',
    )
  }
  checkStorage(env, problems)
  const appUrl = (env.APP_URL ?? `http://localhost:${port}`).replace(/\/+$/, '')
  const sessionDomain = env.SESSION_DOMAIN?.replace(/^\./, '').toLowerCase()
  const sessionDomainMalformed = problems.some((problem) => problem.startsWith('SESSION_DOMAIN:'))
  if (sessionDomain !== undefined && !sessionDomainMalformed && !hostBelongsTo(appUrl, sessionDomain)) {
    problems.push(
      `SESSION_DOMAIN: APP_URL's host is not ${sessionDomain} or under it: the browser would refuse the cookies`,
    )
  }
  if (problems.length > 0) throw new ConfigError(problems)

  const dataDir = resolve(cwd, env.DATA_DIR ?? 'storage')
  return Object.freeze({
    env: nodeEnv,
    host: env.HOST ?? '127.0.0.1',
    port,
    shutdown: Object.freeze(shutdown),
    http: Object.freeze(http),
    appUrl,
    appKey: env.APP_KEY ?? localAppKey(dataDir),
    dataDir,
    databaseUrl: env.DATABASE_URL,
    databasePoolSize: Number(env.DATABASE_POOL_SIZE ?? 10), // db/client.ts DEFAULT_POOL_SIZE
    databasePooler: env.DATABASE_POOLER === 'transaction' ? 'transaction' : 'none',
    databaseTimeouts: Object.freeze({
      statementMs: Number(env.DATABASE_STATEMENT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.statementMs),
      lockMs: Number(env.DATABASE_LOCK_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.lockMs),
      poolWaitMs: Number(env.DATABASE_POOL_WAIT_MS ?? DEFAULT_DATABASE_TIMEOUTS.poolWaitMs),
      longStatementMs: Number(
        env.DATABASE_LONG_STATEMENT_TIMEOUT_MS ?? DEFAULT_DATABASE_TIMEOUTS.longStatementMs,
      ),
    }),
    requestDeadlineMs: Number(env.REQUEST_DEADLINE_MS ?? 25_000),
    redisUrl: env.REDIS_URL,
    redisPrefix: env.REDIS_PREFIX ?? 'trading:',
    redisCommandTimeoutMs: Number(env.REDIS_COMMAND_TIMEOUT_MS ?? 250),
    frontendOrigins: Object.freeze(frontendOrigins),
    session: Object.freeze({
      lifetimeMinutes: Number(env.SESSION_LIFETIME ?? 120),
      absoluteLifetimeMinutes: Number(env.SESSION_ABSOLUTE_LIFETIME ?? 720),
      secureCookie:
        env.SESSION_SECURE_COOKIE === undefined
          ? appUrl.startsWith('https://')
          : env.SESSION_SECURE_COOKIE === 'true' || env.SESSION_SECURE_COOKIE === '1',
      domain: sessionDomain,
      // Laravel's 400 days (576,000 minutes), also the longest a browser keeps a cookie.
      rememberLifetimeMinutes: Number(env.REMEMBER_LIFETIME ?? 576_000),
    }),
    trustedProxies: Object.freeze(trustedProxies),
    mail: Object.freeze({ url: env.MAIL_URL, from: env.MAIL_FROM ?? 'Trading App <no-reply@localhost>' }),
    outboxRetentionDays: Number(env.OUTBOX_RETENTION_DAYS ?? 14),
    logLevel: env.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    logFormat: env.LOG_FORMAT as Config['logFormat'],
    metricsToken: env.METRICS_TOKEN,
    upstream: Object.freeze({
      baseUrl: env.UPSTREAM_BASE_URL?.replace(/\/+$/, ''),
      token: env.UPSTREAM_API_TOKEN ?? '',
      timeoutMs: Number(env.UPSTREAM_TIMEOUT_MS ?? 10_000),
      simulatorPort: Number(env.UPSTREAM_SIM_PORT ?? 8100),
      userReadsPerMinute: Number(env.PROXY_READS_PER_MINUTE ?? 600),
      userWritesPerMinute: Number(env.PROXY_WRITES_PER_MINUTE ?? 60),
      breaker: Object.freeze({
        failures: Number(env.UPSTREAM_BREAKER_FAILURES ?? 5),
        coolDownMs: Number(env.UPSTREAM_BREAKER_COOLDOWN_MS ?? 5_000),
      }),
    }),
    cache: Object.freeze({
      ttlSeconds: Number(env.CACHE_TTL_SECONDS ?? 60),
      staleSeconds: Number(env.CACHE_STALE_SECONDS ?? 600),
      maxBytes: Number(env.CACHE_MAX_MB ?? 64) * 1024 * 1024,
    }),
    credits: Object.freeze({ holdDefault: env.HOLD_DEFAULT_CREDITS ?? '1' }),
    passwordTimeoutSeconds: Number(env.PASSWORD_TIMEOUT ?? 10_800),
    stripe: Object.freeze({
      secretKey: env.STRIPE_SECRET_KEY,
      webhookSecret: env.STRIPE_WEBHOOK_SECRET,
      apiBase: env.STRIPE_API_BASE?.replace(/\/+$/, ''),
    }),
    supportEmail: env.SUPPORT_EMAIL ?? 'support@localhost',
    realtime: Object.freeze({
      ...reverbApp(env, dataDir),
      maxConnections: Number(env.REVERB_MAX_CONNECTIONS ?? 10_000),
      activityTimeoutSeconds: Number(env.REVERB_APP_ACTIVITY_TIMEOUT ?? 30),
      instanceTtlSeconds: Number(env.REVERB_INSTANCE_TTL_SECONDS ?? 30),
      drainSeconds: Number(env.REVERB_DRAIN_SECONDS ?? 5),
      maxConnectionsPerAddress: Number(env.REVERB_MAX_CONNECTIONS_PER_ADDRESS ?? 100),
      // Pusher's own limit per connection.
      maxChannelsPerConnection: Number(env.REVERB_MAX_CHANNELS_PER_CONNECTION ?? 100),
      messageRateLimit: Object.freeze({
        maxAttempts: Number(env.REVERB_APP_RATE_LIMIT_MAX_ATTEMPTS ?? 120),
        decaySeconds: Number(env.REVERB_APP_RATE_LIMIT_DECAY_SECONDS ?? 10),
      }),
      maxBufferedBytes: Number(env.REVERB_MAX_BUFFERED_KB ?? 4096) * 1024,
      // By default the pages that may call the API: APP_URL's and FRONTEND_URL's.
      allowedOrigins:
        socketOrigins === '*'
          ? '*'
          : Object.freeze(
              socketOrigins.length > 0
                ? socketOrigins
                : [...new Set([new URL(appUrl).origin, ...frontendOrigins])],
            ),
    }),
    edition: env.APP_EDITION === 'pro' ? 'pro' : 'standard',
    ai: Object.freeze({
      model:
        env.AI_BASE_URL && env.AI_API_KEY && env.AI_MODEL
          ? Object.freeze({
              baseUrl: env.AI_BASE_URL.replace(/\/+$/, ''),
              apiKey: env.AI_API_KEY,
              name: env.AI_MODEL,
            })
          : null,
      timeoutMs: Number(env.AI_TIMEOUT_MS ?? 60_000),
      jobAttempts: Number(env.AI_JOB_ATTEMPTS ?? 3),
      jobRetryMs: Number(env.AI_JOB_RETRY_MS ?? 10_000),
    }),
    storage: storageSettings(env),
  })
}

/** Whether the host of `url` is `domain` or one of its subdomains (what a browser checks of a cookie's Domain). */
function hostBelongsTo(url: string, domain: string): boolean {
  let host: string
  try {
    host = new URL(url).hostname.toLowerCase()
  } catch {
    return false
  }
  return host === domain || host.endsWith(`.${domain}`)
}

/** STORAGE_DRIVER and the S3_* it needs; problems name variables, never their (secret) values. */
function checkStorage(env: Env, problems: string[]): void {
  const driver = env.STORAGE_DRIVER ?? 'local'
  if (driver !== 'local' && driver !== 's3') {
    problems.push('STORAGE_DRIVER: must be "local" (the default) or "s3"')
  }
  if (driver === 's3' && !env.S3_BUCKET) problems.push('S3_BUCKET: required when STORAGE_DRIVER=s3')
  // A bucket named but no driver chosen is most likely a forgotten STORAGE_DRIVER=s3: uploads would
  // go to each instance's own disk, and be missing on the others, with nothing said.
  if (env.STORAGE_DRIVER === undefined && env.S3_BUCKET) {
    problems.push(
      'STORAGE_DRIVER: S3_BUCKET is set; set STORAGE_DRIVER=s3 to use it, or =local to keep uploads on disk',
    )
  }
  if ((env.S3_ACCESS_KEY_ID === undefined) !== (env.S3_SECRET_ACCESS_KEY === undefined)) {
    problems.push(
      "S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: set both, or neither for the AWS SDK's default credentials",
    )
  }
}

function storageSettings(env: Env): Config['storage'] {
  if (env.STORAGE_DRIVER !== 's3') return Object.freeze({ driver: 'local' })
  const s3: S3Settings = {
    bucket: env.S3_BUCKET as string,
    endpoint: env.S3_ENDPOINT?.replace(/\/+$/, ''),
    region: env.S3_REGION ?? 'us-east-1',
    credentials:
      env.S3_ACCESS_KEY_ID && env.S3_SECRET_ACCESS_KEY
        ? Object.freeze({ accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY })
        : undefined,
    forcePathStyle: env.S3_FORCE_PATH_STYLE === 'true' || env.S3_FORCE_PATH_STYLE === '1',
    prefix: (env.S3_PREFIX ?? '').replace(/^\/+|\/+$/g, ''),
  }
  return Object.freeze({ driver: 's3', s3: Object.freeze(s3) })
}

/** REVERB_APP_ID/KEY/SECRET when all are set; otherwise (outside production) the generated ones, overridden one by one. */
function reverbApp(env: Env, dataDir: string): ReverbApp {
  const given = { appId: env.REVERB_APP_ID, key: env.REVERB_APP_KEY, secret: env.REVERB_APP_SECRET }
  if (given.appId && given.key && given.secret) return given as ReverbApp
  const local = localReverbApp(dataDir)
  return {
    appId: given.appId ?? local.appId,
    key: given.key ?? local.key,
    secret: given.secret ?? local.secret,
  }
}

/** The same config pointed at another upstream (the in-process simulator of server.ts). */
export function withUpstream(config: Config, baseUrl: string, token: string): Config {
  return Object.freeze({ ...config, upstream: Object.freeze({ ...config.upstream, baseUrl, token }) })
}

/** A fresh random APP_KEY in Laravel's `base64:` form. */
export function generateAppKey(): string {
  return `base64:${randomBytes(32).toString('base64')}`
}
