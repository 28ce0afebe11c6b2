import { type Logger, type LoggerOptions, pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { type AccessEntry, accessLineWriter, createLoggers } from './logging.ts'

function capturing(level: string, options: LoggerOptions = {}) {
  const written: string[] = []
  const logger: Logger = pino({ level, ...options }, { write: (line: string) => void written.push(line) })
  return { logger, written }
}

// What pino itself writes for the same entry, the fields named as the access line names them.
const pinoLine = (logger: Logger, entry: AccessEntry) =>
  logger.info(
    {
      request_id: entry.requestId,
      method: entry.method,
      url: entry.url,
      status: entry.status,
      ms: entry.ms,
      ip: entry.ip,
      user_id: entry.userId,
    },
    'request completed',
  )

const entries: AccessEntry[] = [
  {
    requestId: '0b6a3a1e-1c1f-4bb2-9a43-5e0c7a1d2f00',
    method: 'GET',
    url: '/api/markets',
    status: 200,
    ms: 0.41,
    ip: '127.0.0.1',
    userId: 7,
  },
  // Whatever a client can put in a URL is escaped as JSON escapes it; a guest has no user id.
  {
    requestId: 'from-proxy:1',
    method: 'POST',
    url: '/api/x?q="quoted"\\back\u0001\u2028é😀',
    status: 422,
    ms: 12,
    ip: '::ffff:10.0.0.1',
    userId: null,
  },
  { requestId: 'r', method: 'DELETE', url: '/', status: 500, ms: 1234.5, ip: undefined, userId: 1 },
]

describe('the access-log line', () => {
  it('is, byte for byte, the line pino writes for the same fields (but for the time)', () => {
    const ours = capturing('info')
    const theirs = capturing('info')
    const write = accessLineWriter(ours.logger)
    for (const entry of entries) {
      write(entry)
      pinoLine(theirs.logger, entry)
    }
    const untimed = (line: string) => line.replace(/,"time":\d+/, ',"time":0')
    expect(ours.written.map(untimed)).toEqual(theirs.written.map(untimed))
    expect(ours.written.map((line) => JSON.parse(line).msg)).toEqual(entries.map(() => 'request completed'))
  })

  it("keeps the logger's bindings, message key and time, and its level as it is now", () => {
    const options = { base: { service: 'api' }, messageKey: 'message', timestamp: () => ',"time":"t"' }
    const ours = capturing('warn', options)
    const theirs = capturing('info', options)
    const write = accessLineWriter(ours.logger)
    write(entries[0] as AccessEntry)
    expect(ours.written).toEqual([])
    ours.logger.level = 'info'
    write(entries[0] as AccessEntry)
    pinoLine(theirs.logger, entries[0] as AccessEntry)
    expect(ours.written).toEqual(theirs.written)
    expect(JSON.parse(ours.written[0] as string)).toMatchObject({
      service: 'api',
      message: 'request completed',
    })
  })

  it("goes to the service's stdout logger, as the rest of the lines do", () => {
    const written: string[] = []
    const { access } = createLoggers('info', false, { write: (line: string) => void written.push(line) })
    accessLineWriter(access)(entries[0] as AccessEntry)
    expect(JSON.parse(written[0] as string)).toMatchObject({ level: 30, url: '/api/markets', user_id: 7 })
  })
})
