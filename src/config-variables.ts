import { isIP } from 'node:net'
import { type TSchema, type TString, Type } from 'typebox'
import { DEFAULT_DATABASE_TIMEOUTS } from './db/timeouts.ts'
import { laravelKeyBytes } from './lib/laravel-compat/keys.ts'

/**
 * Every environment variable, defined once: its raw string's schema, its default, how it is parsed and
 * what it means. The loader (config.ts) derives its Env schema and typed settings from these records,
 * and docs/configuration.md's reference table is generated from them (`npm run docs:config`).
 */

/** Reports a problem with the variable being parsed (the loader puts its name in front). */
type Problem = (message: string) => void
type Parse<T> = (raw: string, problem: Problem) => T

export interface Variable<V> {
  /** The area it belongs to: a heading of the reference table. */
  readonly area: string
  /** What its raw string must match; a mismatch stops the start with Ajv's message. */
  readonly schema: TString
  /** The docs' default column. */
  readonly shownDefault: string
  /** The docs' meaning column (Markdown, one line). */
  readonly description: string
  /** Its typed value: parsed when set (not empty), else the default. */
  read(raw: string | undefined, problem: Problem): V
}

/** Read by Node itself, not by the loader; documented beside the rest for the operator. */
export interface NodeVariable {
  readonly area: string
  readonly shownDefault: string
  readonly description: string
}

interface Spec<T> {
  readonly schema: TString
  readonly description: string
  readonly parse: Parse<T>
  /** Unset: the variable reads as `undefined` (or a default the loader computes from other variables). */
  readonly fallback?: T
  /** The docs' default column, when the fallback alone does not say it (computed, or a unit to add). */
  readonly shown?: string
  /** Said after the default in the docs, e.g. the default in another unit. */
  readonly defaultNote?: string
}

type Unplaced<V> = Omit<Variable<V>, 'area'>

function variable<T>(spec: Spec<T> & { readonly fallback: T }): Unplaced<T>
function variable<T>(spec: Spec<T>): Unplaced<T | undefined>
function variable<T>(spec: Spec<T>): Unplaced<T | undefined> {
  const { schema, description, parse, fallback, shown, defaultNote } = spec
  return {
    schema,
    description,
    shownDefault: (shown ?? shownValue(fallback)) + (defaultNote ? ` (${defaultNote})` : ''),
    read: (raw, problem) => (raw === undefined ? fallback : parse(raw, problem)),
  }
}

const asText: Parse<string> = (raw) => raw
const asNumber: Parse<number> = Number
const asFlag: Parse<boolean> = (raw) => raw === 'true' || raw === '1'
const withoutTrailingSlash: Parse<string> = (raw) => raw.replace(/\/+$/, '')

/** A string variable kept as given. */
function text(spec: Omit<Spec<string>, 'parse'> & { readonly fallback: string }): Unplaced<string>
function text(spec: Omit<Spec<string>, 'parse'>): Unplaced<string | undefined>
function text(spec: Omit<Spec<string>, 'parse'>): Unplaced<string | undefined> {
  return variable({ ...spec, parse: asText })
}

/** A whole number (or decimal, as its pattern allows) with a default. */
function number(
  pattern: string,
  spec: Omit<Spec<number>, 'parse' | 'schema'> & { readonly fallback: number },
): Unplaced<number> {
  return variable({ ...spec, schema: Type.String({ pattern }), parse: asNumber })
}

/** An http(s) URL, kept without trailing slashes. */
function baseUrl(spec: Omit<Spec<string>, 'parse' | 'schema'>): Unplaced<string | undefined> {
  return variable({ ...spec, schema: Type.String({ pattern: HTTP_URL }), parse: withoutTrailingSlash })
}

function shownValue(value: unknown): string {
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return 'unset'
  if (value === '') return 'empty'
  return `\`${String(value)}\``
}

/** Stamps each record of `variables` with the area it is listed under. */
function area<const T extends Record<string, Unplaced<unknown>>>(
  title: string,
  variables: T,
): { readonly [K in keyof T]: T[K] & { readonly area: string } } {
  return Object.fromEntries(
    Object.entries(variables).map(([name, record]) => [name, Object.freeze({ ...record, area: title })]),
  ) as { readonly [K in keyof T]: T[K] & { readonly area: string } }
}

const HTTP_URL = '^https?://[^\\s]+$'
const BOOLEAN = '^(true|false|1|0|)$'
// Positive whole numbers of up to n digits.
const POSITIVE_4 = '^[1-9][0-9]{0,3}$'
const POSITIVE_5 = '^[1-9][0-9]{0,4}$'
const POSITIVE_6 = '^[1-9][0-9]{0,5}$'
const POSITIVE_7 = '^[1-9][0-9]{0,6}$'

function parseOrigins(value: string, problem: Problem): string[] {
  const origins: string[] = []
  for (const raw of value.split(',')) {
    const item = raw.trim()
    if (!item) continue
    try {
      const url = new URL(item)
      if (url.origin === 'null') throw new Error('opaque')
      origins.push(url.origin)
    } catch {
      problem(`"${item}" is not an http(s) origin such as https://app.example.com`)
    }
  }
  return origins
}

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** Comma-separated addresses, CIDR ranges (10.0.0.0/8, fd00::/8) or proxy-addr's names. */
function parseTrustedProxies(value: string, problem: Problem): string[] {
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
      problem(
        `"${item}" is not an IP address, a CIDR range such as 10.0.0.0/8, or loopback/linklocal/uniquelocal`,
      )
    }
  }
  return proxies
}

const server = area('Server and HTTP', {
  NODE_ENV: variable<'production' | 'development' | 'test'>({
    schema: Type.String(),
    parse: (raw) => (raw === 'production' || raw === 'test' ? raw : 'development'),
    fallback: 'development',
    description: '`production` turns on the production safety checks (APP_KEY required).',
  }),
  PORT: variable({
    schema: Type.String({ pattern: '^[0-9]{1,5}$' }),
    parse: (raw, problem) => {
      const port = Number(raw)
      if (port < 0 || port > 65535) problem('must be a port number from 0 to 65535')
      return port
    },
    fallback: 8000,
    description: 'TCP port to listen on.',
  }),
  HOST: text({
    schema: Type.String({ minLength: 1 }),
    fallback: '127.0.0.1',
    description: 'Address to bind; `0.0.0.0` to serve other machines.',
  }),
  APP_URL: baseUrl({
    shown: '`http://localhost:{PORT}`',
    description: 'Public base URL, used in links the service builds (and the OpenAPI `servers`).',
  }),
  APP_KEY: text({
    schema: Type.String({ pattern: '^base64:[A-Za-z0-9+/]{43}=$' }),
    shown: 'generated',
    description:
      '`base64:` + 32 random bytes; signs links and encrypts secrets at rest. Required in production; elsewhere generated once into `DATA_DIR/app-key`. `npm run cli -- key:generate` prints one.',
  }),
  SHUTDOWN_GRACE_MS: number('^[0-9]{1,6}$', {
    fallback: 2_000,
    description:
      'After SIGTERM or SIGINT, how long an instance keeps accepting connections (answering `/up` with 503 and closing each connection after its answer) before it stops listening. Gives a balancer time to notice. `0` stops listening at once (tests, a single instance). Must be less than `SHUTDOWN_TIMEOUT_MS`.',
  }),
  SHUTDOWN_TIMEOUT_MS: number(POSITIVE_7, {
    fallback: 25_000,
    description:
      "The longest a stop may take, counted from the signal. Past it, the instance logs an error (`the stop did not finish within SHUTDOWN_TIMEOUT_MS; exiting`) and exits 1. Keep it under the process manager's own kill timeout (systemd `TimeoutStopSec`, 90 s by default; Docker's `stop -t`, 10 s by default).",
  }),
  HTTP_REQUEST_TIMEOUT_MS: number(POSITIVE_7, {
    fallback: 30_000,
    description:
      'The longest a request may take to arrive, headers and body (a slower one gets 408 and its connection is closed). Answers are not timed (server-sent events stream for up to `AI_TIMEOUT_MS`), nor WebSockets once upgraded. Behind nginx, bodies arrive at once (nginx buffers them); an instance reached directly needs uploads (up to 51 MiB) to arrive within it.',
  }),
  HTTP_HEADERS_TIMEOUT_MS: number(POSITIVE_7, {
    fallback: 10_000,
    description:
      "The longest a request's headers may take to arrive (from the connection or the end of the previous request). Not more than `HTTP_REQUEST_TIMEOUT_MS`.",
  }),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number(POSITIVE_7, {
    // Fastify's default: longer than nginx's upstream keepalive_timeout (60 s), so nginx closes first.
    fallback: 72_000,
    description:
      "How long an idle kept-alive connection stays open. Keep it longer than the `keepalive_timeout` of nginx's upstream block (60 s in `deploy/nginx`), so nginx closes idle connections first and never sends a request on one the instance is closing.",
  }),
  DATA_DIR: text({
    schema: Type.String({ minLength: 1 }),
    fallback: './storage',
    description:
      'Where the embedded database, the generated key, mail files and uploads (profile photos, chat attachments) live.',
  }),
})

const database = area('Database', {
  DATABASE_URL: text({
    schema: Type.String({ pattern: '^postgres(ql)?://' }),
    description:
      '`postgres://user:pass@host:5432/db` to use PostgreSQL; unset uses embedded PGlite in `DATA_DIR/db`.',
  }),
  DATABASE_POOL_SIZE: number(POSITIVE_4, {
    fallback: 10, // db/client.ts DEFAULT_POOL_SIZE
    description:
      "Connections one instance opens to PostgreSQL at most (1-9999). Keep instances x this under the server's `max_connections` (or PgBouncer's pool). Unused with PGlite.",
  }),
  DATABASE_POOLER: variable<'none' | 'transaction'>({
    schema: Type.String({ pattern: '^(none|transaction)$' }),
    parse: (raw) => (raw === 'transaction' ? 'transaction' : 'none'),
    fallback: 'none',
    description:
      '`transaction` when `DATABASE_URL` is PgBouncer (or another pooler) in transaction mode: statements are sent unnamed, and an instance does not migrate at start but refuses to start while a migration is missing (see [Deployment](../deploy/README.md#release-step)). `none`: PostgreSQL itself, or a session-mode pooler.',
  }),
  DATABASE_STATEMENT_TIMEOUT_MS: number(POSITIVE_7, {
    fallback: DEFAULT_DATABASE_TIMEOUTS.statementMs,
    description:
      "The longest one statement of a request may run (PostgreSQL's `statement_timeout`, also its `idle_in_transaction_session_timeout`). One that runs over is cancelled and its transaction rolled back; the request answers 503 with `Retry-After`. A client-side read time-out 2 s later backs it up. Behind PgBouncer in transaction mode, set it in PgBouncer's `connect_query` (see [PgBouncer](../deploy/README.md#pgbouncer-transaction-pooling)).",
  }),
  DATABASE_LOCK_TIMEOUT_MS: number(POSITIVE_7, {
    fallback: DEFAULT_DATABASE_TIMEOUTS.lockMs,
    description:
      "The longest a statement waits for a row or table lock (`lock_timeout`), and a credit operation for its turn behind the same user's earlier ones: a table locked by hand or by a long migration turns into quick 503s, not requests that hang until the balancer gives up.",
  }),
  DATABASE_POOL_WAIT_MS: number(POSITIVE_7, {
    fallback: DEFAULT_DATABASE_TIMEOUTS.poolWaitMs,
    description:
      "The longest a request waits for one of the pool's connections (all busy, or PostgreSQL not answering the connect). Then 503 with `Retry-After`.",
  }),
  DATABASE_LONG_STATEMENT_TIMEOUT_MS: number('^[1-9][0-9]{0,7}$', {
    fallback: DEFAULT_DATABASE_TIMEOUTS.longStatementMs,
    description:
      'Instead of the two above for migrations (on a connection of their own) and every CLI command, which may rightly take long.',
  }),
  REQUEST_DEADLINE_MS: number(POSITIVE_7, {
    fallback: 25_000,
    description:
      "How long a request may work, from its arrival, before it is given up: from then on it sends no statement but `ROLLBACK`, so its transaction is rolled back rather than committed after the balancer has answered for it. The same holds once its client has gone. Keep it plus `DATABASE_STATEMENT_TIMEOUT_MS` under the balancer's read time-out (nginx's 30 s). An answer that has begun (an AI event stream) is not cut.",
  }),
})

const redis = area('Redis', {
  REDIS_URL: text({
    schema: Type.String({ pattern: '^rediss?://' }),
    description: '`redis://host:6379` to share rate-limit counters (and later the cache) between instances.',
  }),
  REDIS_PREFIX: text({
    schema: Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,64}$' }),
    fallback: 'trading:',
    description:
      'Put before every Redis key and pub/sub channel this service uses, so several deployments can share one Redis server (pub/sub channels ignore Redis database numbers).',
  }),
  REDIS_COMMAND_TIMEOUT_MS: number(POSITIVE_6, {
    fallback: 250,
    description:
      "The longest one Redis command may take. Past it (or at once while Redis is unreachable: commands are never queued) each use goes on without Redis: throttles count in this instance's memory, the cache answers from the upstream or this instance's memory, socket messages are dropped and counted. Redis answers in about a millisecond, so a request never waits on Redis for longer than this.",
  }),
})

const storage = area('Uploads storage', {
  STORAGE_DRIVER: variable({
    schema: Type.String(),
    parse: (raw, problem) => {
      if (raw !== 'local' && raw !== 's3') problem('must be "local" (the default) or "s3"')
      return raw as 'local' | 's3'
    },
    shown: '`local`',
    description:
      'Where uploads (profile photos, chat attachments) live: `local` (folders under `DATA_DIR`) or `s3` (an S3-compatible bucket every instance shares). Anything else stops the boot.',
  }),
  S3_BUCKET: text({
    schema: Type.String({ pattern: '^[^\\s/]{1,255}$' }),
    description:
      'The bucket; required when `STORAGE_DRIVER=s3`. Set while `STORAGE_DRIVER` is unset, it stops the boot (most likely `STORAGE_DRIVER=s3` was forgotten); `STORAGE_DRIVER=local` keeps uploads on disk.',
  }),
  S3_ENDPOINT: baseUrl({
    description:
      'Base URL of a non-AWS server (`http://minio:9000`, `https://<account>.r2.cloudflarestorage.com`...); unset is AWS S3.',
  }),
  S3_REGION: text({
    schema: Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$' }),
    fallback: 'us-east-1',
    description: 'Region used to sign requests (most non-AWS servers accept `us-east-1`).',
  }),
  S3_ACCESS_KEY_ID: text({
    schema: Type.String({ minLength: 1 }),
    description:
      "Access key; set it with `S3_SECRET_ACCESS_KEY`, or neither to use the AWS SDK's default credentials (`AWS_*` environment variables, shared profile, container or instance role).",
  }),
  S3_SECRET_ACCESS_KEY: text({
    schema: Type.String({ minLength: 1 }),
    description: 'Its secret; never logged or put in an error message.',
  }),
  S3_FORCE_PATH_STYLE: variable({
    schema: Type.String({ pattern: BOOLEAN }),
    parse: asFlag,
    fallback: false,
    description:
      '`true` addresses objects as `host/bucket/key` instead of `bucket.host/key`: what MinIO and most self-hosted servers need.',
  }),
  S3_PREFIX: variable({
    schema: Type.String({ pattern: '^/?[A-Za-z0-9_-][A-Za-z0-9_.-]*(/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*/?$' }),
    parse: (raw) => raw.replace(/^\/+|\/+$/g, ''),
    fallback: '',
    shown: 'unset',
    description:
      'Folder every key is put under (`uploads` stores a photo at `uploads/profile-photos/<name>.png`), so the bucket can hold other things too.',
  }),
})

const sessions = area('Browsers and sessions', {
  FRONTEND_URL: variable({
    schema: Type.String(),
    parse: parseOrigins,
    shown:
      "in development (`NODE_ENV` unset), the usual dev-server origins (`http://localhost:5173`, Vite's, and its `:4173` preview, `:3000`, each also on `127.0.0.1`); none in production or test",
    description:
      'Comma-separated browser origins allowed to call with credentials (CORS) and to write (the Origin check), e.g. `https://app.example.com`.',
  }),
  SESSION_LIFETIME: number(POSITIVE_6, {
    fallback: 120,
    description: 'Minutes a session stays alive without activity.',
  }),
  SESSION_ABSOLUTE_LIFETIME: number(POSITIVE_6, {
    fallback: 720,
    description:
      'Minutes (like `SESSION_LIFETIME`) a session lives from its start however active it is; 720 is 12 hours. Then the app signs in again.',
  }),
  SESSION_SECURE_COOKIE: variable({
    schema: Type.String({ pattern: BOOLEAN }),
    parse: asFlag,
    shown: '`true` when `APP_URL` is https, else `false`',
    description: '`true` marks the session, XSRF and remember cookies `Secure` (HTTPS only).',
  }),
  SESSION_DOMAIN: variable({
    // A host name, optionally with Laravel's leading dot (`.example.com`).
    schema: Type.String({
      maxLength: 253,
      pattern: '^\\.?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$',
    }),
    parse: (raw) => raw.replace(/^\./, '').toLowerCase(),
    description:
      "Laravel's setting: the domain the session, XSRF and remember cookies are set for, e.g. `.example.com` when the SPA is on `app.example.com` and the API on `api.example.com` (the SPA must read `XSRF-TOKEN`). Unset: the API's host alone. The start refuses a domain `APP_URL`'s host is not under.",
  }),
  REMEMBER_LIFETIME: number(POSITIVE_7, {
    // Laravel's 400 days, also the longest a browser keeps a cookie.
    fallback: 576_000,
    defaultNote: '400 days',
    description: 'Minutes a device signed in with "remember me" stays remembered (Laravel\'s default).',
  }),
  PASSWORD_TIMEOUT: number(POSITIVE_7, {
    fallback: 10_800,
    description: 'Seconds a password confirmation lasts (sensitive actions answer 423 without one).',
  }),
  TRUSTED_PROXIES: variable({
    schema: Type.String({ maxLength: 4096 }),
    parse: parseTrustedProxies,
    fallback: [],
    description:
      'Comma-separated addresses/CIDRs (or `loopback`, `linklocal`, `uniquelocal`) whose `X-Forwarded-For` is believed.',
  }),
})

const mail = area('Mail and support', {
  MAIL_URL: text({
    schema: Type.String({ pattern: '^smtps?://' }),
    description: '`smtp://host:port` for outgoing mail; unset writes `.eml` files under `DATA_DIR/mail`.',
  }),
  MAIL_FROM: text({
    schema: Type.String({ minLength: 3 }),
    fallback: 'Trading App <no-reply@localhost>',
    description: 'Sender of outgoing mail.',
  }),
  OUTBOX_RETENTION_DAYS: number(POSITIVE_5, {
    fallback: 14,
    description:
      'Days a delivered mail stays in the `outbox` table before a background prune deletes it (failed and waiting ones stay).',
  }),
  SUPPORT_EMAIL: text({
    schema: Type.String({ format: 'email' }),
    fallback: 'support@localhost',
    description: 'Where support forms are mailed.',
  }),
})

const logging = area('Logging and metrics', {
  LOG_LEVEL: text({
    schema: Type.String({ pattern: '^(fatal|error|warn|info|debug|trace|silent)$' }),
    shown: '`info` (`silent` in tests)',
    description:
      'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`. At `info`, one access-log line per request (see Logs in [design.md](design.md)).',
  }),
  LOG_FORMAT: variable({
    schema: Type.String({ pattern: '^(json|pretty)$' }),
    parse: (raw) => raw as 'json' | 'pretty',
    shown: 'pretty on a terminal outside production, else `json`',
    description:
      '`json` (one JSON object per line) or `pretty` (one readable line per entry; see Logs in [design.md](design.md)).',
  }),
  METRICS_TOKEN: text({
    // Visible ASCII, as it travels in a header; long enough not to be guessed.
    schema: Type.String({ minLength: 16, maxLength: 256, pattern: '^[!-~]*$' }),
    description:
      'Turns on `GET /metrics` (Prometheus), answered only to `Authorization: Bearer <METRICS_TOKEN>`. 16-256 visible ASCII characters; never logged. Unset: there is no `/metrics` (404).',
  }),
})

const upstream = area('Upstream, proxy and cache', {
  UPSTREAM_BASE_URL: baseUrl({
    description:
      'Base URL of the upstream trading-data API. Unset outside production: `npm start` runs the built-in simulator. Required in production.',
  }),
  UPSTREAM_API_TOKEN: text({
    schema: Type.String({ minLength: 1 }),
    fallback: '',
    description: 'Bearer token for the upstream; never sent to callers or logged.',
  }),
  UPSTREAM_TIMEOUT_MS: number(POSITIVE_7, {
    fallback: 10_000,
    description: 'Time-out for one whole upstream call.',
  }),
  UPSTREAM_SIM_PORT: number('^[0-9]{1,5}$', {
    fallback: 8100,
    description: 'Port of `npm run upstream:sim`.',
  }),
  UPSTREAM_BREAKER_FAILURES: number(POSITIVE_4, {
    fallback: 5,
    description:
      'Upstream faults in a row (time-outs, refused or reset connections, 5xx) that open the circuit breaker: calls then fail at once instead of each waiting `UPSTREAM_TIMEOUT_MS`.',
  }),
  UPSTREAM_BREAKER_COOLDOWN_MS: number(POSITIVE_7, {
    fallback: 5_000,
    description:
      'How long the breaker stays open before one probe call goes through; its answer closes it, its fault opens it again.',
  }),
  PROXY_READS_PER_MINUTE: number(POSITIVE_7, {
    fallback: 600,
    description:
      "Proxied upstream reads one user may make a minute (cached or not), `POST /api/market-balance` and the AI assistants' tool calls included.",
  }),
  PROXY_WRITES_PER_MINUTE: number(POSITIVE_7, {
    fallback: 60,
    description:
      'Proxied upstream writes one user may make a minute: strategy and condition creates, updates, deletes and actions (whatever the answer).',
  }),
  CACHE_TTL_SECONDS: number('^[0-9]{1,6}$', {
    fallback: 60,
    description: 'Lifetime of cached upstream reads.',
  }),
  CACHE_STALE_SECONDS: number('^[0-9]{1,6}$', {
    fallback: 600,
    description:
      'How long past its TTL a cached read is kept, and answered (stale) when the upstream fails or the breaker is open. `0` turns stale answers off.',
  }),
  CACHE_MAX_MB: number(POSITIVE_6, {
    fallback: 64,
    description:
      'Memory bound of the in-process cache. With `REDIS_URL`: of the near copies of entries only a TTL ends, and, apart, of what an instance keeps while Redis does not answer.',
  }),
})

const credits = area('Credits and payments', {
  HOLD_DEFAULT_CREDITS: variable({
    schema: Type.String({ pattern: '^[0-9]{1,9}(\\.[0-9]{1,4})?$' }),
    parse: (raw, problem) => {
      // The database refuses a hold of 0 credits (credit_holds_amount_positive).
      if (Number(raw) <= 0) problem('must be greater than 0')
      return raw
    },
    fallback: '1',
    description: 'Credits a hold reserves when the request names no amount.',
  }),
  HOLD_TTL_HOURS: number('^[0-9]{1,5}$', {
    fallback: 168,
    defaultNote: '7 days',
    description:
      'Hours a hold may stay `held` (like a card authorization): then one instance releases it and its credits are free again. `0` never expires holds.',
  }),
  STRIPE_SECRET_KEY: text({
    schema: Type.String({ minLength: 1 }),
    description: 'Enables `GET /buy-credits/{package}` (Stripe Checkout); unset answers 503.',
  }),
  STRIPE_WEBHOOK_SECRET: text({
    schema: Type.String({ minLength: 1 }),
    description: 'Verifies `Stripe-Signature` on `POST /payments/buy-credits/webhook`.',
  }),
  STRIPE_API_BASE: baseUrl({
    description: 'Points the Stripe SDK at another API host (a test double).',
  }),
})

const realtime = area('Realtime sockets (Reverb)', {
  REVERB_APP_ID: text({
    schema: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }),
    shown: 'generated',
    description:
      "The socket app's id (Pusher's `app_id`, for the trigger API). Named after Laravel Reverb's settings, so the app's `VITE_REVERB_*` map across. Required in production; elsewhere the three are generated once into `DATA_DIR/reverb-app.json`.",
  }),
  REVERB_APP_KEY: text({
    schema: Type.String({ pattern: '^[A-Za-z0-9_-]{1,128}$' }),
    shown: 'generated',
    description:
      "The public key the app's Echo connects with (`/app/{key}`, `auth` signatures). Required in production.",
  }),
  REVERB_APP_SECRET: text({
    schema: Type.String({ minLength: 16, maxLength: 256 }),
    shown: 'generated',
    description: 'Signs channel subscriptions and trigger API requests; never sent. Required in production.',
  }),
  REVERB_MAX_CONNECTIONS: number(POSITIVE_7, {
    fallback: 10_000,
    description: 'Sockets one instance takes; past that a socket gets `pusher:error` 4004 and is closed.',
  }),
  REVERB_APP_ACTIVITY_TIMEOUT: number(POSITIVE_4, {
    fallback: 30,
    description:
      'Seconds of silence before the server pings a socket; one silent for twice as long is closed (4201).',
  }),
  REVERB_INSTANCE_TTL_SECONDS: number(POSITIVE_4, {
    fallback: 30,
    description: "With Redis: how long an instance's presence and online records outlive it if it dies.",
  }),
  REVERB_DRAIN_SECONDS: number('^[0-9]{1,3}(\\.[0-9]{1,3})?$', {
    fallback: 5,
    description:
      'Over how long a stopping instance closes its sockets (code 4100, so clients reconnect elsewhere a few at a time).',
  }),
  REVERB_MAX_CONNECTIONS_PER_ADDRESS: number(POSITIVE_7, {
    fallback: 100,
    description:
      'Sockets one client address may hold on one instance (an IPv6 address counts as its /64; behind `TRUSTED_PROXIES`, the forwarded address); past that `pusher:error` 4004 and a close.',
  }),
  REVERB_MAX_CHANNELS_PER_CONNECTION: number(POSITIVE_5, {
    fallback: 100, // Pusher's own limit per connection.
    description:
      "Channels one socket may be subscribed to (Pusher's limit); another subscribe gets `pusher:error` 4009 and the socket stays. A socket remembers twice as many channels authorized for it in its life; the grant past that closes it with 4200 (pusher-js reconnects at once).",
  }),
  REVERB_APP_RATE_LIMIT_MAX_ATTEMPTS: number(POSITIVE_6, {
    fallback: 120,
    description:
      "Frames (subscribe, unsubscribe, ping, client events...) one socket may send per window; later ones in the window are dropped unread, the first of them answered with `pusher:error` 4301. Reverb's setting, always on here.",
  }),
  REVERB_APP_RATE_LIMIT_DECAY_SECONDS: number(POSITIVE_4, {
    fallback: 10,
    description: "That window, opened by a socket's first frame in it.",
  }),
  REVERB_MAX_BUFFERED_KB: number(POSITIVE_7, {
    fallback: 4096,
    description:
      'KiB queued for one socket and not yet taken by the network before it is closed as not reading (code 4101: pusher-js reconnects after a back-off).',
  }),
  REVERB_ALLOWED_ORIGINS: variable({
    schema: Type.String({ maxLength: 4096 }),
    parse: (raw, problem): readonly string[] | '*' => (raw.trim() === '*' ? '*' : parseOrigins(raw, problem)),
    shown: "`APP_URL`'s and `FRONTEND_URL`'s origins",
    description:
      'Comma-separated origins (`https://app.example.com`) whose pages may open a socket, or `*` for any. Another `Origin` gets `pusher:error` 4009 "Origin not allowed" and a close; a socket with no `Origin` (a server-side client) is taken.',
  }),
})

const ai = area('AI and edition', {
  APP_EDITION: variable<'standard' | 'pro'>({
    schema: Type.String({ pattern: '^(standard|pro)$' }),
    parse: (raw) => (raw === 'pro' ? 'pro' : 'standard'),
    fallback: 'standard',
    description:
      '`pro` gives the trading agent and the signed-in assistant the market tools (markets, tickers, sectors, calendar, market balance).',
  }),
  AI_BASE_URL: baseUrl({
    description:
      'An OpenAI-compatible API (`https://api.openai.com/v1`, a vLLM or Ollama server...). Set it with `AI_API_KEY` and `AI_MODEL`, or none of the three: then a built-in offline model answers from the knowledge base.',
  }),
  AI_API_KEY: text({
    schema: Type.String({ minLength: 1 }),
    description: 'Bearer key for `AI_BASE_URL`; never logged or sent to callers.',
  }),
  AI_MODEL: text({
    schema: Type.String({ minLength: 1, maxLength: 191 }),
    description: 'The model name sent to `AI_BASE_URL` (and stored with each AI call).',
  }),
  AI_TIMEOUT_MS: number(POSITIVE_7, {
    fallback: 60_000,
    description:
      'The longest one AI call may take (all its steps and tool calls); past it the stream ends with an `error` chunk.',
  }),
  AI_JOB_ATTEMPTS: number('^[1-9][0-9]?$', {
    fallback: 3,
    description: 'Tries of a chat analysis (`ask_ai`) before it is recorded as failed.',
  }),
  AI_JOB_RETRY_MS: number('^[0-9]{1,7}$', {
    fallback: 10_000,
    description: 'Delay before its first retry; it doubles with each try (with ±20% jitter).',
  }),
})

/** A Laravel key list as laravelKeys reads it: each key `base64:` + 16 or 32 bytes, or raw text of that length. */
const laravelKeyList: Parse<string> = (raw, problem) => {
  for (const key of raw.split(',').filter((item) => item !== '')) {
    try {
      laravelKeyBytes(key)
    } catch {
      problem(
        'each key must be `base64:` + 16 or 32 bytes (as Laravel writes APP_KEY), or 16 or 32 characters',
      )
      break
    }
  }
  return raw
}
// An instant in ISO 8601: a date alone (its midnight UTC), or a date and time with its offset.
const ISO_INSTANT =
  '^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,3})?)?(Z|[+-][0-9]{2}:[0-9]{2}))?$'

const laravel = area('Taking over a Laravel deployment', {
  LARAVEL_APP_KEY: variable({
    schema: Type.String(),
    parse: laravelKeyList,
    description:
      "The Laravel original's `APP_KEY`, which opened its two-factor secrets and sessions: `import:laravel` reads it when `--app-key` is not given ([migrating from Laravel](migrating-from-laravel.md)).",
  }),
  LARAVEL_PREVIOUS_KEYS: variable({
    schema: Type.String(),
    parse: laravelKeyList,
    description:
      "The original's `APP_PREVIOUS_KEYS` (comma-separated), tried after `LARAVEL_APP_KEY`; `--previous-keys` wins over it.",
  }),
  LARAVEL_SESSION_COOKIE: text({
    schema: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$' }),
    fallback: 'laravel_session',
    description:
      "The name of the original's session cookie, its `config('session.cookie')`: its `SESSION_COOKIE`, else `Str::slug(APP_NAME, '_').'_session'` (Laravel 11 and 12; `Str::snake` in 13).",
  }),
  LARAVEL_COOKIES_UNTIL: variable({
    schema: Type.String({ pattern: ISO_INSTANT }),
    parse: (raw, problem) => {
      const ms = Date.parse(raw)
      // Date.parse rolls a day past its month's end over (2026-02-30 is March 2): refused as well.
      const [year, month, day] = raw.slice(0, 10).split('-').map(Number) as [number, number, number]
      const real = new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day
      if (Number.isNaN(ms) || !real) problem('must be a date (2026-03-01) or a date and time with its offset')
      return ms
    },
    description:
      "Until when the original's cookies are taken (an ISO date, `2026-03-01`, its midnight UTC, or `2026-03-01T06:00:00Z`): its session cookie continues an imported session, its `remember_web_*` cookie signs its user in, and its `X-XSRF-TOKEN` passes the CSRF check (see [accounts.md](accounts.md#signed-in-browsers-of-the-laravel-original)). Needs `LARAVEL_APP_KEY`. Unset or past: those cookies are ignored, unopened.",
  }),
})

/** Every variable the loader reads, by name, in the order of the reference table. */
export const VARIABLES = Object.freeze({
  ...server,
  ...database,
  ...redis,
  ...storage,
  ...sessions,
  ...mail,
  ...logging,
  ...upstream,
  ...credits,
  ...realtime,
  ...ai,
  ...laravel,
})

/** Documented with the rest, read by Node itself. */
export const NODE_VARIABLES: Readonly<Record<string, NodeVariable>> = Object.freeze({
  NODE_COMPILE_CACHE: {
    area: logging.LOG_LEVEL.area,
    shownDefault: '`$TMPDIR/node-compile-cache`',
    description:
      "Node's compile cache, which `npm start` and the CLI turn on: compiled modules (and stripped TypeScript) are reused by later starts. `NODE_DISABLE_COMPILE_CACHE=1` turns it off.",
  },
})

export type VariableName = keyof typeof VARIABLES

/** The typed value of each variable: what its record's `read` gives. */
export type Settings = {
  readonly [K in VariableName]: (typeof VARIABLES)[K] extends Variable<infer V> ? V : never
}

/** The raw environment's schema: every variable optional, as a string matching its record's schema. */
export const Env = Type.Object(
  Object.fromEntries(
    Object.entries(VARIABLES).map(([name, record]) => [name, Type.Optional(record.schema)]),
  ) as Record<string, TSchema>,
)

/** Reads every variable of `picked` (set, non-empty values) through its record; problems name the variable. */
export function readSettings(picked: Readonly<Record<string, string>>, problems: string[]): Settings {
  const settings: Record<string, unknown> = {}
  for (const [name, record] of Object.entries(VARIABLES) as [VariableName, Variable<unknown>][]) {
    settings[name] = record.read(picked[name], (message) => problems.push(`${name}: ${message}`))
  }
  return settings as Settings
}
