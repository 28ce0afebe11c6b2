import pino from 'pino'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { TestClient } from '../../test/helpers/client.ts'
import { appUnderTest } from '../../test/helpers/under-test.ts'
import type { AppEvents } from './events.ts'

/** The application events of the spec's Events table. */
type SpecEvent =
  | 'ActivityLogged'
  | 'JoinRequestResponded'
  | 'AiCallCompleted'
  | 'AiCallFailed'
  | 'GroupDeleted'
  | 'MessageDeleted'
  | 'UserLeftGroup'
  | 'SocketMessage'
  | 'TokenUpdatedEvent'

const logs: Array<Record<string, any>> = []
const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) })

const t = appUnderTest({
  loggerInstance: logger,
  extend: (app) => {
    // Stands in for a chat route that emits after its change.
    app.post('/test/leave-group', async () => {
      app.events.emit('UserLeftGroup', { groupId: 7, userId: 3, memberCount: 4 })
      return { left: true }
    })
  },
})

describe('app.events', () => {
  it('types every event of the spec and no other (checked by tsc: npm run check)', () => {
    expectTypeOf<keyof AppEvents>().toEqualTypeOf<SpecEvent>()
  })

  it('calls each listener with the payload; a failing listener is logged and fails neither the emitter nor the others', async () => {
    const received: AppEvents['UserLeftGroup'][] = []
    const offs = [
      t.app.events.on('UserLeftGroup', () => {
        throw new Error('listener broke')
      }),
      t.app.events.on('UserLeftGroup', async () => {
        throw new Error('listener rejected')
      }),
      t.app.events.on('UserLeftGroup', (payload) => {
        received.push(payload)
      }),
    ]
    const client = new TestClient(t.baseUrl)
    const res = await client.post('/test/leave-group')
    expect(res.status).toBe(200)
    expect(res.data).toEqual({ left: true })
    expect(received).toEqual([{ groupId: 7, userId: 3, memberCount: 4 }])
    await new Promise((resolve) => setImmediate(resolve)) // the rejection is reported a tick later
    const failures = logs.filter((line) => line.msg === 'event listener failed')
    expect(failures.map((line) => [line.level, line.event, line.err?.message])).toEqual([
      [50, 'UserLeftGroup', 'listener broke'],
      [50, 'UserLeftGroup', 'listener rejected'],
    ])

    // A listener that unsubscribes hears no more.
    for (const off of offs) off()
    expect((await client.post('/test/leave-group')).status).toBe(200)
    expect(received).toHaveLength(1)
    expect(logs.filter((line) => line.msg === 'event listener failed')).toHaveLength(2)
  })
})
