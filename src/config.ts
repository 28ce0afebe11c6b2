import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parse as parseDotenv } from 'dotenv'
import { Env, readSettings, type Settings, VARIABLES } from './config-variables.ts'
import type { DatabaseTimeouts } from './db/timeouts.ts'
import { type GeneratedKeys, keysInDataDir } from './generated-keys.ts'
import { compileValidator } from './lib/validation.ts'

export { generateAppKey } from './generated-keys.ts'

/** Every variable the loader reads, by name (docs/configuration.md's table is generated from their records). */
export const CONFIG_VARIABLES: readonly string[] = Object.freeze(Object.keys(VARIABLES))

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
  readonly credits: {
    readonly holdDefault: string
    /** HOLD_TTL_HOURS: how long a hold may stay held before the sweep releases it; 0: never. */
    readonly holdTtlHours: number
  }
  /**
   * The Laravel original's keys (LARAVEL_APP_KEY, LARAVEL_PREVIOUS_KEYS), for `import:laravel` and its
   * browsers' cookies; its session cookie's name; until when (ms since the epoch) the cookies its
   * browsers still carry are taken (LARAVEL_COOKIES_UNTIL; undefined: never).
   */
  readonly laravel: {
    readonly appKey: string | undefined
    readonly previousKeys: string | undefined
    readonly sessionCookie: string
    readonly cookiesUntilMs: number | undefined
  }
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

/**
 * Where an app's dev server runs (Vite's dev and preview ports, and 3000), as Sanctum's stateful
 * domains default to localhost: `npm start` beside the app's `npm run dev` works without settings.
 * Development only: production names its SPA, and tests name theirs.
 */
const DEV_SERVER_ORIGINS = ['5173', '4173', '3000'].flatMap((port) => [
  `http://localhost:${port}`,
  `http://127.0.0.1:${port}`,
])

/** Reads `.env` (when present) under the process environment, which wins. */
function readEnvironment(source: NodeJS.ProcessEnv, cwd: string): Record<string, string | undefined> {
  const dotenvPath = join(cwd, '.env')
  const fromFile = existsSync(dotenvPath) ? parseDotenv(readFileSync(dotenvPath)) : {}
  return { ...fromFile, ...source }
}

/**
 * The only reader of process.env: validates it (and `.env`) and returns a frozen, typed Config.
 * Outside production, APP_KEY and the socket app's credentials left unset are generated once into
 * DATA_DIR and read back from there (generated-keys.ts).
 */
export function loadConfig(source: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  return parseConfig(readEnvironment(source, cwd), cwd, keysInDataDir)
}

/**
 * The Config of an environment already read; touches no file itself: the secrets it lacks outside
 * production come from `keys`, asked only once the environment is found valid.
 */
export function parseConfig(
  environment: Readonly<Record<string, string | undefined>>,
  cwd: string,
  keys: GeneratedKeys,
): Config {
  const picked: Record<string, string> = {}
  for (const key of CONFIG_VARIABLES) {
    const value = environment[key]
    if (value !== undefined && value !== '') picked[key] = value
  }
  const problems = Object.entries(checkEnv(picked)).map(([key, messages]) => `${key}: ${messages[0]}`)
  const s = readSettings(picked, problems)
  checkSettings(s, problems)
  if (problems.length > 0) throw new ConfigError(problems)

  const nodeEnv = s.NODE_ENV
  const appUrl = appUrlOf(s)
  const dataDir = resolve(cwd, s.DATA_DIR)
  const frontendOrigins = s.FRONTEND_URL ?? (nodeEnv === 'development' ? DEV_SERVER_ORIGINS : [])
  return Object.freeze({
    env: nodeEnv,
    host: s.HOST,
    port: s.PORT,
    shutdown: Object.freeze({ graceMs: s.SHUTDOWN_GRACE_MS, timeoutMs: s.SHUTDOWN_TIMEOUT_MS }),
    http: Object.freeze({
      requestTimeoutMs: s.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeoutMs: s.HTTP_HEADERS_TIMEOUT_MS,
      keepAliveTimeoutMs: s.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    }),
    appUrl,
    appKey: s.APP_KEY ?? keys.appKey(dataDir),
    dataDir,
    databaseUrl: s.DATABASE_URL,
    databasePoolSize: s.DATABASE_POOL_SIZE,
    databasePooler: s.DATABASE_POOLER,
    databaseTimeouts: Object.freeze({
      statementMs: s.DATABASE_STATEMENT_TIMEOUT_MS,
      lockMs: s.DATABASE_LOCK_TIMEOUT_MS,
      poolWaitMs: s.DATABASE_POOL_WAIT_MS,
      longStatementMs: s.DATABASE_LONG_STATEMENT_TIMEOUT_MS,
    } satisfies DatabaseTimeouts),
    requestDeadlineMs: s.REQUEST_DEADLINE_MS,
    redisUrl: s.REDIS_URL,
    redisPrefix: s.REDIS_PREFIX,
    redisCommandTimeoutMs: s.REDIS_COMMAND_TIMEOUT_MS,
    frontendOrigins: Object.freeze(frontendOrigins),
    session: Object.freeze({
      lifetimeMinutes: s.SESSION_LIFETIME,
      absoluteLifetimeMinutes: s.SESSION_ABSOLUTE_LIFETIME,
      secureCookie: s.SESSION_SECURE_COOKIE ?? appUrl.startsWith('https://'),
      domain: s.SESSION_DOMAIN,
      rememberLifetimeMinutes: s.REMEMBER_LIFETIME,
    }),
    trustedProxies: Object.freeze(s.TRUSTED_PROXIES),
    mail: Object.freeze({ url: s.MAIL_URL, from: s.MAIL_FROM }),
    outboxRetentionDays: s.OUTBOX_RETENTION_DAYS,
    logLevel: s.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    logFormat: s.LOG_FORMAT,
    metricsToken: s.METRICS_TOKEN,
    upstream: Object.freeze({
      baseUrl: s.UPSTREAM_BASE_URL,
      token: s.UPSTREAM_API_TOKEN,
      timeoutMs: s.UPSTREAM_TIMEOUT_MS,
      simulatorPort: s.UPSTREAM_SIM_PORT,
      userReadsPerMinute: s.PROXY_READS_PER_MINUTE,
      userWritesPerMinute: s.PROXY_WRITES_PER_MINUTE,
      breaker: Object.freeze({
        failures: s.UPSTREAM_BREAKER_FAILURES,
        coolDownMs: s.UPSTREAM_BREAKER_COOLDOWN_MS,
      }),
    }),
    cache: Object.freeze({
      ttlSeconds: s.CACHE_TTL_SECONDS,
      staleSeconds: s.CACHE_STALE_SECONDS,
      maxBytes: s.CACHE_MAX_MB * 1024 * 1024,
    }),
    credits: Object.freeze({ holdDefault: s.HOLD_DEFAULT_CREDITS, holdTtlHours: s.HOLD_TTL_HOURS }),
    laravel: Object.freeze({
      appKey: s.LARAVEL_APP_KEY,
      previousKeys: s.LARAVEL_PREVIOUS_KEYS,
      sessionCookie: s.LARAVEL_SESSION_COOKIE,
      cookiesUntilMs: s.LARAVEL_COOKIES_UNTIL,
    }),
    passwordTimeoutSeconds: s.PASSWORD_TIMEOUT,
    stripe: Object.freeze({
      secretKey: s.STRIPE_SECRET_KEY,
      webhookSecret: s.STRIPE_WEBHOOK_SECRET,
      apiBase: s.STRIPE_API_BASE,
    }),
    supportEmail: s.SUPPORT_EMAIL,
    realtime: Object.freeze({
      ...reverbApp(s, dataDir, keys),
      maxConnections: s.REVERB_MAX_CONNECTIONS,
      activityTimeoutSeconds: s.REVERB_APP_ACTIVITY_TIMEOUT,
      instanceTtlSeconds: s.REVERB_INSTANCE_TTL_SECONDS,
      drainSeconds: s.REVERB_DRAIN_SECONDS,
      maxConnectionsPerAddress: s.REVERB_MAX_CONNECTIONS_PER_ADDRESS,
      maxChannelsPerConnection: s.REVERB_MAX_CHANNELS_PER_CONNECTION,
      messageRateLimit: Object.freeze({
        maxAttempts: s.REVERB_APP_RATE_LIMIT_MAX_ATTEMPTS,
        decaySeconds: s.REVERB_APP_RATE_LIMIT_DECAY_SECONDS,
      }),
      maxBufferedBytes: s.REVERB_MAX_BUFFERED_KB * 1024,
      allowedOrigins: socketOrigins(s, appUrl, frontendOrigins),
    }),
    edition: s.APP_EDITION,
    ai: Object.freeze({
      model:
        s.AI_BASE_URL && s.AI_API_KEY && s.AI_MODEL
          ? Object.freeze({ baseUrl: s.AI_BASE_URL, apiKey: s.AI_API_KEY, name: s.AI_MODEL })
          : null,
      timeoutMs: s.AI_TIMEOUT_MS,
      jobAttempts: s.AI_JOB_ATTEMPTS,
      jobRetryMs: s.AI_JOB_RETRY_MS,
    }),
    storage: storageSettings(s),
  })
}

/** The checks that involve more than one variable (each variable's own are in its record). */
function checkSettings(s: Settings, problems: string[]): void {
  const production = s.NODE_ENV === 'production'
  if (s.SHUTDOWN_GRACE_MS >= s.SHUTDOWN_TIMEOUT_MS) {
    problems.push('SHUTDOWN_GRACE_MS: must be less than SHUTDOWN_TIMEOUT_MS')
  }
  // Node refuses a headers time-out longer than the request's (which includes the headers).
  const httpMalformed = problems.some((problem) => problem.startsWith('HTTP_'))
  if (!httpMalformed && s.HTTP_HEADERS_TIMEOUT_MS > s.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push('HTTP_HEADERS_TIMEOUT_MS: must not be more than HTTP_REQUEST_TIMEOUT_MS')
  }
  if (s.DATABASE_POOLER === 'transaction' && !s.DATABASE_URL) {
    problems.push('DATABASE_POOLER: transaction needs DATABASE_URL (the pooler); PGlite has none')
  }
  if (production && !s.APP_KEY) {
    problems.push(
      'APP_KEY: required when NODE_ENV=production (generate one with `npm run cli -- key:generate`)',
    )
  }
  if (production && !s.UPSTREAM_BASE_URL) {
    problems.push(
      'UPSTREAM_BASE_URL: required when NODE_ENV=production (the built-in simulator runs only outside production)',
    )
  }
  if (production) {
    for (const name of ['REVERB_APP_ID', 'REVERB_APP_KEY', 'REVERB_APP_SECRET'] as const) {
      if (!s[name]) problems.push(`${name}: required when NODE_ENV=production`)
    }
  }
  const aiSettings = [s.AI_BASE_URL, s.AI_API_KEY, s.AI_MODEL].filter((value) => value !== undefined)
  if (aiSettings.length !== 0 && aiSettings.length !== 3) {
    problems.push(
      'AI_BASE_URL, AI_API_KEY, AI_MODEL: set all three for a model server, or none for the offline model',
    )
  }
  checkStorage(s, problems)
  checkLaravel(s, problems)
  const appUrl = appUrlOf(s)
  const sessionDomainMalformed = problems.some((problem) => problem.startsWith('SESSION_DOMAIN:'))
  if (s.SESSION_DOMAIN !== undefined && !sessionDomainMalformed && !hostBelongsTo(appUrl, s.SESSION_DOMAIN)) {
    problems.push(
      `SESSION_DOMAIN: APP_URL's host is not ${s.SESSION_DOMAIN} or under it: the browser would refuse the cookies`,
    )
  }
}

// The cookies this service sets itself (plugins/session.ts, the auth module's device cookie).
const OWN_COOKIES = new Set(['app_session', 'app_remember', 'app_device', 'XSRF-TOKEN'])

/** The Laravel original's cookies: a window needs the key that opens them, and a name not one of ours. */
function checkLaravel(s: Settings, problems: string[]): void {
  if (!s.LARAVEL_APP_KEY && s.LARAVEL_COOKIES_UNTIL !== undefined) {
    problems.push("LARAVEL_COOKIES_UNTIL: needs LARAVEL_APP_KEY, the key that opens the original's cookies")
  }
  if (OWN_COOKIES.has(s.LARAVEL_SESSION_COOKIE)) {
    problems.push(`LARAVEL_SESSION_COOKIE: ${s.LARAVEL_SESSION_COOKIE} is a cookie of this service's own`)
  }
}

/** APP_URL, by default the port on localhost. */
function appUrlOf(s: Settings): string {
  return s.APP_URL ?? `http://localhost:${s.PORT}`
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
function checkStorage(s: Settings, problems: string[]): void {
  if (s.STORAGE_DRIVER === 's3' && !s.S3_BUCKET) problems.push('S3_BUCKET: required when STORAGE_DRIVER=s3')
  // A bucket named but no driver chosen is most likely a forgotten STORAGE_DRIVER=s3: uploads would
  // go to each instance's own disk, and be missing on the others, with nothing said.
  if (s.STORAGE_DRIVER === undefined && s.S3_BUCKET) {
    problems.push(
      'STORAGE_DRIVER: S3_BUCKET is set; set STORAGE_DRIVER=s3 to use it, or =local to keep uploads on disk',
    )
  }
  if ((s.S3_ACCESS_KEY_ID === undefined) !== (s.S3_SECRET_ACCESS_KEY === undefined)) {
    problems.push(
      "S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: set both, or neither for the AWS SDK's default credentials",
    )
  }
}

function storageSettings(s: Settings): Config['storage'] {
  if (s.STORAGE_DRIVER !== 's3') return Object.freeze({ driver: 'local' })
  const s3: S3Settings = {
    bucket: s.S3_BUCKET as string,
    endpoint: s.S3_ENDPOINT,
    region: s.S3_REGION,
    credentials:
      s.S3_ACCESS_KEY_ID && s.S3_SECRET_ACCESS_KEY
        ? Object.freeze({ accessKeyId: s.S3_ACCESS_KEY_ID, secretAccessKey: s.S3_SECRET_ACCESS_KEY })
        : undefined,
    forcePathStyle: s.S3_FORCE_PATH_STYLE,
    prefix: s.S3_PREFIX,
  }
  return Object.freeze({ driver: 's3', s3: Object.freeze(s3) })
}

/** REVERB_APP_ID/KEY/SECRET when all are set; otherwise (outside production) the generated ones, overridden one by one. */
function reverbApp(
  s: Settings,
  dataDir: string,
  keys: GeneratedKeys,
): Pick<Config['realtime'], 'appId' | 'key' | 'secret'> {
  const given = { appId: s.REVERB_APP_ID, key: s.REVERB_APP_KEY, secret: s.REVERB_APP_SECRET }
  if (given.appId && given.key && given.secret)
    return { appId: given.appId, key: given.key, secret: given.secret }
  const local = keys.reverbApp(dataDir)
  return {
    appId: given.appId ?? local.appId,
    key: given.key ?? local.key,
    secret: given.secret ?? local.secret,
  }
}

/** REVERB_ALLOWED_ORIGINS; by default the pages that may call the API: APP_URL's and FRONTEND_URL's. */
function socketOrigins(
  s: Settings,
  appUrl: string,
  frontendOrigins: readonly string[],
): Config['realtime']['allowedOrigins'] {
  const named = s.REVERB_ALLOWED_ORIGINS
  if (named === '*') return '*'
  if (named !== undefined && named.length > 0) return Object.freeze([...named])
  return Object.freeze([...new Set([new URL(appUrl).origin, ...frontendOrigins])])
}

/** The same config pointed at another upstream (the in-process simulator of server.ts). */
export function withUpstream(config: Config, baseUrl: string, token: string): Config {
  return Object.freeze({ ...config, upstream: Object.freeze({ ...config.upstream, baseUrl, token }) })
}
