import { createRequire } from 'node:module'
import {
  type DestinationStream,
  destination,
  type Logger,
  type LoggerOptions,
  pino,
  stdSerializers,
  symbols,
} from 'pino'

// Query parameters whose values are secrets (signed links, reset tokens) are masked in logged URLs.
const SECRET_QUERY = /([?&](?:token|signature|password|code|secret)=)[^&]*/gi

export const redactUrl = (url: string) =>
  url.includes('?') ? url.replace(SECRET_QUERY, '$1[REDACTED]') : url

/**
 * pino's error serializer, minus the values Drizzle binds into a failed query: DrizzleQueryError
 * repeats them (tokens, password hashes, emails) in its message, stack and `params`; the SQL stays.
 */
export function serializeError(error: Error) {
  const bound: string[] = []
  let current: unknown = error
  for (let depth = 0; current instanceof Error && depth < 10; depth++) {
    if ('query' in current && 'params' in current) bound.push(`\nparams: ${String(current.params)}`)
    current = current.cause
  }
  const serialized = stdSerializers.err(error)
  if (bound.length === 0) return serialized
  const scrub = (text: string) =>
    bound.reduce((out, values) => out.split(values).join('\nparams: [REDACTED]'), text)
  serialized.message = scrub(serialized.message)
  serialized.stack = scrub(serialized.stack)
  if ('params' in serialized) serialized.params = '[REDACTED]'
  return serialized
}

/** pino settings: request id on every line, and no cookie, token, password or session id ever written. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: {
      paths: [
        'req.headers.cookie',
        'req.headers.authorization',
        'req.headers["x-xsrf-token"]',
        'req.headers["x-csrf-token"]',
        'res.headers["set-cookie"]',
        '*.password',
        '*.password_confirmation',
        '*.current_password',
        '*.token',
        '*._token',
      ],
      censor: '[REDACTED]',
    },
    serializers: {
      err: serializeError,
      req: (req: { method: string; url: string; ip?: string; headers: Record<string, unknown> }) => ({
        method: req.method,
        url: redactUrl(req.url),
        ip: req.ip,
        user_agent: req.headers['user-agent'],
      }),
    },
  }
}

/**
 * stdout, written asynchronously and in batches: a log line never waits for the terminal or the
 * pipe; lines are gathered here and handed to sonic-boom once 16 KiB have gathered or a quarter of a
 * second has passed, so a busy instance makes one write for eighty lines rather than one each.
 * Gathered here rather than by sonic-boom's own `minLength`: it measures its whole pending text on
 * every line, a growing cost that was a tenth of a cached read. What is left is written at exit.
 */
export function asyncStdout(): DestinationStream {
  stdout ??= gatheringStdout()
  return stdout
}
// One per process, whatever number of apps it builds (tests build many): they all write to fd 1.
let stdout: DestinationStream | undefined

// sonic-boom's own largest write: one write per hand-over.
const GATHER_BYTES = 16 * 1024

function gatheringStdout(): DestinationStream {
  let lines: string[] = []
  let gathered = 0
  let closed = false
  const handOver = () => {
    if (gathered === 0 || closed) return
    out.write(lines.join(''))
    lines = []
    gathered = 0
  }
  // Registered before sonic-boom's own exit hooks (made with it, below), so they run first.
  process.once('beforeExit', handOver)
  process.once('exit', () => {
    handOver()
    if (!closed) out.flushSync()
  })
  const out = destination({ dest: 1, sync: false })
  out.once('close', () => {
    closed = true
  })
  setInterval(handOver, 250).unref()
  return {
    write(line: string) {
      lines.push(line)
      gathered += line.length
      if (gathered >= GATHER_BYTES) handOver()
    },
  }
}

/**
 * Whether lines are written for people: asked for with LOG_FORMAT, or else when stdout is a
 * terminal outside production (a developer's `npm start`). Pipes, files and containers get JSON.
 */
export function wantsPrettyLogs(
  format: 'json' | 'pretty' | undefined,
  env: string,
  stdoutIsTerminal = Boolean(process.stdout.isTTY),
): boolean {
  return format ? format === 'pretty' : env !== 'production' && stdoutIsTerminal
}

/**
 * The service's two loggers, on one stdout: `app` (Fastify's, every line redacted) and `access`,
 * for the access-log line only: its fields are fixed and none can hold a secret, so it skips the
 * redaction pass, which cost more than building and writing the line. JSON lines, written
 * asynchronously; or, for people, one coloured line each, written as they come (pino-pretty, loaded
 * only then).
 */
export function createLoggers(
  level: string,
  pretty = false,
  destination: DestinationStream = pretty ? prettyStdout() : asyncStdout(),
): { app: Logger; access: Logger } {
  return { app: pino(loggerOptions(level), destination), access: pino({ level }, destination) }
}

/** What the access-log line says of one answered request (plugins/access-log.ts). */
export interface AccessEntry {
  requestId: string
  method: string
  url: string
  status: number
  ms: number
  ip: string | undefined
  userId: number | null
}

export const ACCESS_MESSAGE = 'request completed'

/**
 * Writes access-log lines through `logger`'s own destination, at its `info` level, as the very line
 * `logger.info({request_id, method, url, status, ms, ip, user_id}, 'request completed')` would be (its
 * time, bindings and message key; the test holds the two equal), built as one template: pino's
 * general path walks and checks each field, the larger part of what a cached read's line cost.
 * Fields are written as they are given: the caller masks the URL.
 */
export function accessLineWriter(logger: Logger): (entry: AccessEntry) => void {
  // pino's own state, which its `symbols` export is for.
  const internals = logger as unknown as Record<symbol, unknown>
  const destination = internals[symbols.streamSym] as DestinationStream
  const time = internals[symbols.timeSym] as () => string
  const bindings = internals[symbols.chindingsSym] as string
  const info = logger.levels.values.info ?? 30
  const message = `,${JSON.stringify(internals[symbols.messageKeySym] as string)}:${JSON.stringify(ACCESS_MESSAGE)}}\n`
  return (entry) => {
    if (logger.levelVal > info) return
    destination.write(
      `{"level":${info}${time()}${bindings},"request_id":${JSON.stringify(entry.requestId)},"method":${JSON.stringify(entry.method)},"url":${JSON.stringify(entry.url)},"status":${entry.status},"ms":${entry.ms}${entry.ip === undefined ? '' : `,"ip":${JSON.stringify(entry.ip)}`},"user_id":${entry.userId}${message}`,
    )
  }
}

const require = createRequire(import.meta.url)

function prettyStdout(): DestinationStream {
  const pretty = require('pino-pretty') as typeof import('pino-pretty')
  return pretty(prettyOptions())
}

/** pino-pretty's settings: a line per entry, fields inline, the access line as `GET /url 200 3 ms`. */
export function prettyOptions(destination?: NodeJS.WritableStream): import('pino-pretty').PrettyOptions {
  return {
    ...(destination ? { destination } : {}),
    colorize: !destination && Boolean(process.stdout.isTTY),
    sync: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    messageFormat: (log, messageKey) =>
      log[messageKey] === ACCESS_MESSAGE
        ? `${log.method} ${log.url} ${log.status} ${log.ms} ms`
        : String(log[messageKey] ?? ''),
  }
}
