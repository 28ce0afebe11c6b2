import Fastify, { LogController } from 'fastify'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { lazyChildLogger } from './lazy-logger.ts'

// A real Fastify with a real pino, counting the children it makes and keeping what it writes.
let written: Record<string, unknown>[] = []
const parent = pino({ level: 'info' }, { write: (line: string) => void written.push(JSON.parse(line)) })
let children = 0
const app = Fastify({
  loggerInstance: parent,
  logController: new LogController({ disableRequestLogging: true }),
  childLoggerFactory(logger, bindings, options) {
    const made = lazyChildLogger(
      Object.assign(Object.create(logger), {
        child: (...args: Parameters<typeof logger.child>) => {
          children += 1
          return logger.child(...args)
        },
      }),
      bindings,
      options,
    )
    return made
  },
})
app.get('/quiet', async () => ({ ok: true }))
app.get('/debug-only', async (request) => {
  request.log.debug('below the level')
  return { ok: true }
})
app.get('/talk', async (request) => {
  request.log.info({ step: 1 }, 'first')
  request.log.warn('second')
  return { ok: true }
})
app.get('/verbose', async (request) => {
  request.log.level = 'debug'
  request.log.debug('now written')
  return { level: request.log.level }
})

beforeAll(() => app.ready())
afterAll(() => app.close())

describe('lazyChildLogger', () => {
  it('makes no child for a request that writes nothing, or only lines below the level', async () => {
    children = 0
    await app.inject('/quiet')
    await app.inject('/debug-only')
    expect(children).toBe(0)
    expect(written).toEqual([])
  })

  it("makes the child once, on the request's first line, with the request id on every line", async () => {
    children = 0
    written = []
    await app.inject('/talk')
    expect(children).toBe(1)
    expect(written).toMatchObject([
      { reqId: expect.stringMatching(/^req-/), level: 30, step: 1, msg: 'first' },
      { reqId: written[0]?.reqId, level: 40, msg: 'second' },
    ])
  })

  it('lets a request set its own level without touching the parent', async () => {
    written = []
    const res = await app.inject('/verbose')
    expect(res.json()).toEqual({ level: 'debug' })
    expect(written).toMatchObject([{ level: 20, msg: 'now written' }])
    expect(parent.level).toBe('info')
  })
})
