import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { ConfigError, generateAppKey, loadConfig } from './config.ts'

const APP_KEY = 'base64:dGVzdC1hcHAta2V5LXRlc3QtYXBwLWtleS10ZXN0LWE='
const UPSTREAM = 'https://upstream.example.com'
const REVERB = {
  REVERB_APP_ID: '4242',
  REVERB_APP_KEY: 'app-key-1',
  REVERB_APP_SECRET: 'a-secret-of-twenty-chars',
}
const KEY_SHAPE = /^base64:[A-Za-z0-9+/]{43}=$/

const dirs: string[] = []
/** A fresh working directory: no `.env` unless a test writes one. */
function tempCwd(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-config-'))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function configError(env: Record<string, string>, cwd = tempCwd()): ConfigError {
  try {
    loadConfig(env, cwd)
  } catch (error) {
    if (error instanceof ConfigError) return error
    throw error
  }
  throw new Error('loadConfig accepted the environment')
}

describe('loadConfig', () => {
  test('defaults: port 8000 on 127.0.0.1, APP_URL from the port, 120-minute sessions, ./storage', () => {
    const cwd = tempCwd()
    const config = loadConfig({}, cwd)
    expect(config).toMatchObject({
      env: 'development',
      host: '127.0.0.1',
      port: 8000,
      appUrl: 'http://localhost:8000',
      dataDir: join(cwd, 'storage'),
      databaseUrl: undefined,
      databasePoolSize: 10,
      databasePooler: 'none',
      redisUrl: undefined,
      frontendOrigins: expect.arrayContaining(['http://localhost:5173', 'http://127.0.0.1:5173']),
      session: { lifetimeMinutes: 120, absoluteLifetimeMinutes: 720, secureCookie: false },
      mail: { url: undefined, from: 'Trading App <no-reply@localhost>' },
      outboxRetentionDays: 14,
      logLevel: 'info',
    })
    expect(Object.isFrozen(config)).toBe(true)
    expect(loadConfig({ PORT: '9000', APP_KEY }, cwd).appUrl).toBe('http://localhost:9000')
    expect(loadConfig({ NODE_ENV: 'test', APP_KEY }, cwd).logLevel).toBe('silent')
    expect(loadConfig({ NODE_ENV: 'test', APP_KEY }, cwd).frontendOrigins).toEqual([])
  })

  test('a relative DATA_DIR is resolved against the working directory', () => {
    const cwd = tempCwd()
    expect(loadConfig({ DATA_DIR: 'var/data', APP_KEY }, cwd).dataDir).toBe(join(cwd, 'var/data'))
  })

  test('reads .env in the working directory, and the environment wins over it', () => {
    const cwd = tempCwd()
    writeFileSync(
      join(cwd, '.env'),
      `PORT=9001\nHOST=0.0.0.0\nSESSION_LIFETIME=30\nAPP_KEY=${APP_KEY}\nFRONTEND_URL=https://app.example.com/\n`,
    )
    const config = loadConfig({ PORT: '9002' }, cwd)
    expect(config.port).toBe(9002)
    expect(config.host).toBe('0.0.0.0')
    expect(config.session.lifetimeMinutes).toBe(30)
    expect(loadConfig({ SESSION_ABSOLUTE_LIFETIME: '60', OUTBOX_RETENTION_DAYS: '30' }, cwd)).toMatchObject({
      session: { lifetimeMinutes: 30, absoluteLifetimeMinutes: 60 },
      outboxRetentionDays: 30,
    })
    expect(config.appKey).toBe(APP_KEY)
    expect(config.frontendOrigins).toEqual(['https://app.example.com'])
  })

  test('an empty variable counts as unset, so the environment can blank out a .env value', () => {
    const cwd = tempCwd()
    writeFileSync(join(cwd, '.env'), 'DATABASE_URL=postgres://db.example.com/app\nPORT=9001\n')
    const config = loadConfig({ DATABASE_URL: '', PORT: '', APP_KEY }, cwd)
    expect(config.databaseUrl).toBeUndefined()
    expect(config.port).toBe(8000)
  })

  test.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['SESSION_LIFETIME', '0'],
    ['SESSION_ABSOLUTE_LIFETIME', '0'],
    ['SESSION_ABSOLUTE_LIFETIME', '12h'],
    ['OUTBOX_RETENTION_DAYS', '0'],
    ['OUTBOX_RETENTION_DAYS', '-1'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_POOL_SIZE', '0'],
    ['DATABASE_POOL_SIZE', 'ten'],
    ['DATABASE_POOLER', 'pgbouncer'],
    ['DATABASE_POOLER', 'transaction'],
    ['FRONTEND_URL', 'not a url'],
    ['LOG_LEVEL', 'loud'],
    ['APP_KEY', 'base64:c2hvcnQ='],
    ['APP_KEY', 'dGVzdC1hcHAta2V5LXRlc3QtYXBwLWtleS10ZXN0LWE='],
    ['HOLD_DEFAULT_CREDITS', '0'],
    ['HOLD_DEFAULT_CREDITS', '0.0000'],
    ['HOLD_DEFAULT_CREDITS', '1.00001'],
  ])('%s=%s is refused with a message naming the variable', (name, value) => {
    const error = configError({ APP_KEY, [name]: value })
    expect(error.problems).toHaveLength(1)
    expect(error.problems[0]).toMatch(new RegExp(`^${name}: `))
    expect(error.message).toContain(`${name}: `)
  })

  test('HOLD_TTL_HOURS: 168 hours (7 days) by default, whole hours as given, 0 to never expire holds', () => {
    const ttl = (env: Record<string, string>) =>
      loadConfig({ APP_KEY, ...env }, tempCwd()).credits.holdTtlHours
    expect(ttl({})).toBe(168)
    expect(ttl({ HOLD_TTL_HOURS: '' })).toBe(168)
    expect(ttl({ HOLD_TTL_HOURS: '24' })).toBe(24)
    expect(ttl({ HOLD_TTL_HOURS: '0' })).toBe(0)
  })

  test.each(['-1', '1.5', '24h', 'never', '100000'])('HOLD_TTL_HOURS=%s is refused', (value) => {
    const error = configError({ APP_KEY, HOLD_TTL_HOURS: value })
    expect(error.problems).toEqual([expect.stringMatching(/^HOLD_TTL_HOURS: /)])
  })

  test('DATABASE_POOLER=transaction names a transaction-mode pooler in front of PostgreSQL', () => {
    const url = 'postgres://app@pgbouncer.internal:6432/app'
    const config = loadConfig({ APP_KEY, DATABASE_URL: url, DATABASE_POOLER: 'transaction' }, tempCwd())
    expect(config).toMatchObject({ databaseUrl: url, databasePooler: 'transaction' })
    expect(
      loadConfig({ APP_KEY, DATABASE_URL: url, DATABASE_POOLER: 'none' }, tempCwd()).databasePooler,
    ).toBe('none')
  })

  test('every bad variable is reported at once', () => {
    const error = configError({ APP_KEY, PORT: 'abc', LOG_LEVEL: 'loud' })
    expect(error.problems.map((p) => p.split(':')[0]).sort()).toEqual(['LOG_LEVEL', 'PORT'])
  })

  test('NODE_ENV=production requires APP_KEY, UPSTREAM_BASE_URL and the socket app, and writes no key of its own', () => {
    const cwd = tempCwd()
    const error = configError({ NODE_ENV: 'production' }, cwd)
    expect(error.problems).toEqual([
      expect.stringMatching(/^APP_KEY: required when NODE_ENV=production/),
      expect.stringMatching(/^UPSTREAM_BASE_URL: required when NODE_ENV=production/),
      'REVERB_APP_ID: required when NODE_ENV=production',
      'REVERB_APP_KEY: required when NODE_ENV=production',
      'REVERB_APP_SECRET: required when NODE_ENV=production',
    ])
    expect(existsSync(join(cwd, 'storage', 'app-key'))).toBe(false)
    expect(existsSync(join(cwd, 'storage', 'reverb-app.json'))).toBe(false)

    const config = loadConfig(
      { NODE_ENV: 'production', APP_KEY, UPSTREAM_BASE_URL: UPSTREAM, ...REVERB },
      cwd,
    )
    expect(config.env).toBe('production')
    expect(config.appKey).toBe(APP_KEY)
    // The dev-server origins are a convenience of development: production names its SPA.
    expect(config.frontendOrigins).toEqual([])
    expect(config.realtime).toMatchObject({
      appId: '4242',
      key: 'app-key-1',
      secret: REVERB.REVERB_APP_SECRET,
    })
  })

  test('outside production the socket app is generated once under DATA_DIR and read back', () => {
    const cwd = tempCwd()
    const first = loadConfig({ DATA_DIR: 'data' }, cwd).realtime
    expect(first.appId).toMatch(/^\d{6}$/)
    expect(first.key).toMatch(/^[0-9a-f]{20}$/)
    expect(first.secret).toMatch(/^[0-9a-f]{40}$/)
    expect(statSync(join(cwd, 'data', 'reverb-app.json')).mode & 0o777).toBe(0o600)
    expect(loadConfig({ DATA_DIR: 'data' }, cwd).realtime).toEqual(first)
    expect(loadConfig({ DATA_DIR: 'data', REVERB_APP_KEY: 'mine' }, cwd).realtime.key).toBe('mine')
    expect(first).toMatchObject({
      maxConnections: 10_000,
      activityTimeoutSeconds: 30,
      instanceTtlSeconds: 30,
    })
  })

  test('outside production a missing APP_KEY is generated once under DATA_DIR and read back', () => {
    const cwd = tempCwd()
    const first = loadConfig({ DATA_DIR: 'data' }, cwd)
    expect(first.appKey).toMatch(KEY_SHAPE)
    const file = join(cwd, 'data', 'app-key')
    expect(readFileSync(file, 'utf8').trim()).toBe(first.appKey)
    expect(statSync(file).mode & 0o777).toBe(0o600)

    expect(loadConfig({ DATA_DIR: 'data' }, cwd).appKey).toBe(first.appKey)
    // Another data folder is another installation, with its own key.
    expect(loadConfig({ DATA_DIR: 'other' }, cwd).appKey).not.toBe(first.appKey)
    // A configured key wins over the generated one.
    expect(loadConfig({ DATA_DIR: 'data', APP_KEY }, cwd).appKey).toBe(APP_KEY)
  })

  test('METRICS_TOKEN: unset by default; a short or unsendable one is refused without being repeated', () => {
    const token = 'metrics-token-0123456789'
    expect(loadConfig({ APP_KEY }, tempCwd()).metricsToken).toBeUndefined()
    expect(loadConfig({ APP_KEY, METRICS_TOKEN: token }, tempCwd()).metricsToken).toBe(token)
    for (const refused of ['short-secret', 'a token with spaces in it', 'tøken-with-a-non-ascii-letter']) {
      const error = configError({ APP_KEY, METRICS_TOKEN: refused })
      expect(error.problems).toEqual([expect.stringMatching(/^METRICS_TOKEN: /)])
      expect(error.message).not.toContain(refused)
    }
  })

  test('SHUTDOWN_GRACE_MS and SHUTDOWN_TIMEOUT_MS: 2 s and 25 s by default; the grace period must end first', () => {
    expect(loadConfig({ APP_KEY }, tempCwd()).shutdown).toEqual({ graceMs: 2_000, timeoutMs: 25_000 })
    expect(
      loadConfig({ APP_KEY, SHUTDOWN_GRACE_MS: '0', SHUTDOWN_TIMEOUT_MS: '5000' }, tempCwd()).shutdown,
    ).toEqual({ graceMs: 0, timeoutMs: 5_000 })
    expect(configError({ APP_KEY, SHUTDOWN_GRACE_MS: '5000', SHUTDOWN_TIMEOUT_MS: '5000' }).problems).toEqual(
      ['SHUTDOWN_GRACE_MS: must be less than SHUTDOWN_TIMEOUT_MS'],
    )
    const bad = configError({ APP_KEY, SHUTDOWN_GRACE_MS: '-1', SHUTDOWN_TIMEOUT_MS: '0' })
    expect(bad.problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'SHUTDOWN_GRACE_MS',
      'SHUTDOWN_TIMEOUT_MS',
    ])
  })

  test('HTTP_*_TIMEOUT_MS: request 30 s, headers 10 s, keep-alive 72 s by default; headers within the request', () => {
    expect(loadConfig({ APP_KEY }, tempCwd()).http).toEqual({
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 72_000,
    })
    const env = {
      HTTP_REQUEST_TIMEOUT_MS: '5000',
      HTTP_HEADERS_TIMEOUT_MS: '2000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
    }
    expect(loadConfig({ APP_KEY, ...env }, tempCwd()).http).toEqual({
      requestTimeoutMs: 5_000,
      headersTimeoutMs: 2_000,
      keepAliveTimeoutMs: 65_000,
    })
    expect(configError({ APP_KEY, HTTP_REQUEST_TIMEOUT_MS: '5000' }).problems).toEqual([
      'HTTP_HEADERS_TIMEOUT_MS: must not be more than HTTP_REQUEST_TIMEOUT_MS',
    ])
    const bad = configError({ APP_KEY, HTTP_REQUEST_TIMEOUT_MS: '0', HTTP_KEEP_ALIVE_TIMEOUT_MS: 'x' })
    expect(bad.problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'HTTP_KEEP_ALIVE_TIMEOUT_MS',
      'HTTP_REQUEST_TIMEOUT_MS',
    ])
  })

  test("LARAVEL_*: the original's keys as given, its session cookie, and a window that needs a key", () => {
    const laravelKey = 'base64:yv1CCn5s6GvEebVIW5r4y+P/19A7szb7AP2zWDGtQrY='
    const oldKey = 'base64:NrPahKKW02uBP0fHGYKX7g=='
    expect(loadConfig({ APP_KEY }, tempCwd()).laravel).toEqual({
      appKey: undefined,
      previousKeys: undefined,
      sessionCookie: 'laravel_session',
      cookiesUntilMs: undefined,
    })
    const env = {
      APP_KEY,
      LARAVEL_APP_KEY: laravelKey,
      LARAVEL_PREVIOUS_KEYS: `${oldKey},,0123456789abcdef0123456789abcdef`,
      LARAVEL_SESSION_COOKIE: 'my_app_session',
      LARAVEL_COOKIES_UNTIL: '2026-03-01',
    }
    expect(loadConfig(env, tempCwd()).laravel).toEqual({
      appKey: laravelKey,
      previousKeys: env.LARAVEL_PREVIOUS_KEYS,
      sessionCookie: 'my_app_session',
      cookiesUntilMs: Date.UTC(2026, 2, 1),
    })
    expect(
      loadConfig({ ...env, LARAVEL_COOKIES_UNTIL: '2026-03-01T06:30:00+01:00' }, tempCwd()).laravel,
    ).toMatchObject({ cookiesUntilMs: Date.UTC(2026, 2, 1, 5, 30) })
    expect(configError({ APP_KEY, LARAVEL_COOKIES_UNTIL: '2026-03-01' }).problems).toEqual([
      "LARAVEL_COOKIES_UNTIL: needs LARAVEL_APP_KEY, the key that opens the original's cookies",
    ])
    expect(configError({ ...env, LARAVEL_COOKIES_UNTIL: '2026-02-30' }).problems).toEqual([
      'LARAVEL_COOKIES_UNTIL: must be a date (2026-03-01) or a date and time with its offset',
    ])
    const bad = configError({
      APP_KEY,
      LARAVEL_APP_KEY: 'base64:c2hvcnQ=-too-short',
      LARAVEL_PREVIOUS_KEYS: `${oldKey},not a key of 16 or 32`,
      LARAVEL_SESSION_COOKIE: 'app_session',
      LARAVEL_COOKIES_UNTIL: '2026-13-01',
    })
    expect(bad.problems.map((p) => p.split(':')[0]).sort()).toEqual([
      'LARAVEL_APP_KEY',
      'LARAVEL_COOKIES_UNTIL',
      'LARAVEL_PREVIOUS_KEYS',
      'LARAVEL_SESSION_COOKIE',
    ])
    // Problems never quote a key: it is a secret.
    expect(bad.message).not.toContain('c2hvcnQ')
    expect(bad.message).not.toContain('not a key of 16 or 32')
  })

  test('generateAppKey gives 32 random bytes in the form APP_KEY accepts', () => {
    const key = generateAppKey()
    expect(key).toMatch(KEY_SHAPE)
    expect(Buffer.from(key.slice('base64:'.length), 'base64')).toHaveLength(32)
    expect(generateAppKey()).not.toBe(key)
    expect(
      loadConfig({ NODE_ENV: 'production', APP_KEY: key, UPSTREAM_BASE_URL: UPSTREAM, ...REVERB }, tempCwd())
        .appKey,
    ).toBe(key)
  })
})

describe('proxies and https', () => {
  test('TRUSTED_PROXIES: none by default; addresses, CIDR ranges and proxy-addr names, comma-separated', () => {
    const cwd = tempCwd()
    expect(loadConfig({ APP_KEY }, cwd).trustedProxies).toEqual([])
    const config = loadConfig(
      { APP_KEY, TRUSTED_PROXIES: ' 10.0.0.1, 10.0.0.0/8,fd00::/8 ,::1,loopback, ' },
      cwd,
    )
    expect(config.trustedProxies).toEqual(['10.0.0.1', '10.0.0.0/8', 'fd00::/8', '::1', 'loopback'])
  })

  test.each(['10.0.0.300', '10.0.0.0/33', 'fd00::/129', 'proxy.example.com', '10.0.0.0/8/1', '*'])(
    'TRUSTED_PROXIES=%s is refused with a message naming the variable',
    (value) => {
      const error = configError({ APP_KEY, TRUSTED_PROXIES: value })
      expect(error.problems).toEqual([expect.stringMatching(/^TRUSTED_PROXIES: /)])
    },
  )

  test('PROXY_WRITES_PER_MINUTE: 60 by default, a positive whole number when set', () => {
    const cwd = tempCwd()
    expect(loadConfig({ APP_KEY }, cwd).upstream.userWritesPerMinute).toBe(60)
    expect(loadConfig({ APP_KEY, PROXY_WRITES_PER_MINUTE: '90' }, cwd).upstream.userWritesPerMinute).toBe(90)
    for (const value of ['0', '-1', 'many', '1.5']) {
      expect(configError({ APP_KEY, PROXY_WRITES_PER_MINUTE: value }).problems).toEqual([
        expect.stringMatching(/^PROXY_WRITES_PER_MINUTE: /),
      ])
    }
  })

  test('PROXY_READS_PER_MINUTE: 600 by default, a positive whole number when set', () => {
    const cwd = tempCwd()
    expect(loadConfig({ APP_KEY }, cwd).upstream.userReadsPerMinute).toBe(600)
    expect(loadConfig({ APP_KEY, PROXY_READS_PER_MINUTE: '1200' }, cwd).upstream.userReadsPerMinute).toBe(
      1200,
    )
    for (const value of ['0', '-1', 'many']) {
      expect(configError({ APP_KEY, PROXY_READS_PER_MINUTE: value }).problems).toEqual([
        expect.stringMatching(/^PROXY_READS_PER_MINUTE: /),
      ])
    }
  })

  test('cookies are Secure when APP_URL is https, unless SESSION_SECURE_COOKIE says otherwise', () => {
    const cwd = tempCwd()
    const secure = (env: Record<string, string>) => loadConfig({ APP_KEY, ...env }, cwd).session.secureCookie
    expect(secure({ APP_URL: 'https://api.example.com' })).toBe(true)
    expect(secure({ APP_URL: 'http://localhost:8000' })).toBe(false)
    expect(secure({ APP_URL: 'http://localhost:8000', SESSION_SECURE_COOKIE: 'true' })).toBe(true)
    expect(secure({ APP_URL: 'https://api.example.com', SESSION_SECURE_COOKIE: 'false' })).toBe(false)
  })

  test("SESSION_DOMAIN: unset by default; Laravel's leading dot is dropped; APP_URL's host must belong to it", () => {
    const cwd = tempCwd()
    const domain = (env: Record<string, string>) => loadConfig({ APP_KEY, ...env }, cwd).session.domain
    expect(domain({ APP_URL: 'https://api.example.com' })).toBeUndefined()
    expect(domain({ APP_URL: 'https://api.example.com', SESSION_DOMAIN: '.example.com' })).toBe('example.com')
    expect(domain({ APP_URL: 'https://api.example.com', SESSION_DOMAIN: 'Example.COM' })).toBe('example.com')
    expect(domain({ APP_URL: 'https://api.example.com', SESSION_DOMAIN: 'api.example.com' })).toBe(
      'api.example.com',
    )
    // A sibling, a suffix that is no parent, and a parent of another host: the browser would drop the cookies.
    for (const [appUrl, sessionDomain] of [
      ['https://api.example.com', '.app.example.com'],
      ['https://api.notexample.com', '.example.com'],
      ['https://example.org', 'example.com'],
      ['http://localhost:8000', '.example.com'],
    ] as const) {
      expect(configError({ APP_KEY, APP_URL: appUrl, SESSION_DOMAIN: sessionDomain }).problems).toEqual([
        expect.stringMatching(/^SESSION_DOMAIN: APP_URL's host is not /),
      ])
    }
    for (const bad of ['https://example.com', 'example.com/path', '.', 'exa mple.com', '-example.com']) {
      expect(configError({ APP_KEY, SESSION_DOMAIN: bad }).problems).toEqual([
        expect.stringMatching(/^SESSION_DOMAIN: /),
      ])
    }
  })

  test('REMEMBER_LIFETIME: 400 days in minutes by default, as Laravel; a positive whole number when set', () => {
    const cwd = tempCwd()
    expect(loadConfig({ APP_KEY }, cwd).session.rememberLifetimeMinutes).toBe(576_000)
    expect(loadConfig({ APP_KEY, REMEMBER_LIFETIME: '60' }, cwd).session.rememberLifetimeMinutes).toBe(60)
    for (const bad of ['0', '-1', '1.5', 'forever']) {
      expect(configError({ APP_KEY, REMEMBER_LIFETIME: bad }).problems).toEqual([
        expect.stringMatching(/^REMEMBER_LIFETIME: /),
      ])
    }
  })
})

describe('socket limits', () => {
  const refusesBadValues = (name: string) => {
    for (const value of ['0', '-1', 'many']) {
      expect(configError({ APP_KEY, [name]: value }).problems).toEqual([expect.stringMatching(`^${name}: `)])
    }
  }

  test('REVERB_MAX_CHANNELS_PER_CONNECTION 100 and REVERB_APP_RATE_LIMIT_* 120 frames per 10 s by default', () => {
    expect(loadConfig({ APP_KEY }, tempCwd()).realtime).toMatchObject({
      maxChannelsPerConnection: 100,
      messageRateLimit: { maxAttempts: 120, decaySeconds: 10 },
    })
    const env = {
      APP_KEY,
      REVERB_MAX_CHANNELS_PER_CONNECTION: '50',
      REVERB_APP_RATE_LIMIT_MAX_ATTEMPTS: '60',
      REVERB_APP_RATE_LIMIT_DECAY_SECONDS: '60',
    }
    expect(loadConfig(env, tempCwd()).realtime).toMatchObject({
      maxChannelsPerConnection: 50,
      messageRateLimit: { maxAttempts: 60, decaySeconds: 60 },
    })
    refusesBadValues('REVERB_MAX_CHANNELS_PER_CONNECTION')
    refusesBadValues('REVERB_APP_RATE_LIMIT_MAX_ATTEMPTS')
    refusesBadValues('REVERB_APP_RATE_LIMIT_DECAY_SECONDS')
  })

  test('REVERB_MAX_BUFFERED_KB: 4 MiB by default, counted in KiB', () => {
    expect(loadConfig({ APP_KEY }, tempCwd()).realtime.maxBufferedBytes).toBe(4 * 1024 * 1024)
    expect(loadConfig({ APP_KEY, REVERB_MAX_BUFFERED_KB: '512' }, tempCwd()).realtime.maxBufferedBytes).toBe(
      512 * 1024,
    )
    refusesBadValues('REVERB_MAX_BUFFERED_KB')
  })

  test('REVERB_MAX_CONNECTIONS_PER_ADDRESS: 100 by default', () => {
    expect(loadConfig({ APP_KEY }, tempCwd()).realtime.maxConnectionsPerAddress).toBe(100)
    expect(
      loadConfig({ APP_KEY, REVERB_MAX_CONNECTIONS_PER_ADDRESS: '20' }, tempCwd()).realtime
        .maxConnectionsPerAddress,
    ).toBe(20)
    refusesBadValues('REVERB_MAX_CONNECTIONS_PER_ADDRESS')
  })

  test("REVERB_ALLOWED_ORIGINS: APP_URL's and FRONTEND_URL's origins by default, the origins named, or *", () => {
    const env = { APP_KEY, APP_URL: 'https://api.example.com/', FRONTEND_URL: 'https://app.example.com' }
    expect(loadConfig(env, tempCwd()).realtime.allowedOrigins).toEqual([
      'https://api.example.com',
      'https://app.example.com',
    ])
    expect(
      loadConfig(
        { ...env, REVERB_ALLOWED_ORIGINS: 'https://A.example.com/path, http://localhost:5173' },
        tempCwd(),
      ).realtime.allowedOrigins,
    ).toEqual(['https://a.example.com', 'http://localhost:5173'])
    expect(loadConfig({ ...env, REVERB_ALLOWED_ORIGINS: '*' }, tempCwd()).realtime.allowedOrigins).toBe('*')
    expect(configError({ ...env, REVERB_ALLOWED_ORIGINS: 'app.example.com' }).problems).toEqual([
      'REVERB_ALLOWED_ORIGINS: "app.example.com" is not an http(s) origin such as https://app.example.com',
    ])
  })
})
