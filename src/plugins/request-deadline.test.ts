import { setTimeout as sleep } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../test/helpers/build-test-app.ts'
import { TestClient } from '../../test/helpers/client.ts'
import { type OwnPostgres, startOwnPostgres } from '../../test/helpers/own-postgres.ts'
import { type Db, openDatabase } from '../db/client.ts'

/**
 * A request whose client has gone, or that has worked past REQUEST_DEADLINE_MS without answering,
 * sends no further statement but ROLLBACK. A test-only route does what a slow request does: a
 * statement that takes a while (pg_sleep, on a PostgreSQL of the test's own), then a write.
 */
describe('a request given up commits nothing', () => {
  let postgres: OwnPostgres
  let t: TestApp

  beforeAll(async () => {
    postgres = await startOwnPostgres()
    const database = await openDatabase({ url: postgres.url })
    await database.migrate()
    await postgres.sql('create table deadline_probe (note text not null)')
    t = await buildTestApp({
      database,
      env: { REQUEST_DEADLINE_MS: '700' },
      extend(app) {
        app.post<{ Querystring: { sleep: string; note: string; transaction?: string } }>(
          '/test/slow-write',
          async (request, reply) => {
            const { sleep: seconds, note, transaction } = request.query
            const work = async (db: Db) => {
              await db.execute(sql`select pg_sleep(${Number(seconds)})`)
              await db.execute(sql`insert into deadline_probe (note) values (${note})`)
            }
            if (transaction) await app.db.transaction(work)
            else await work(app.db)
            return reply.code(201).send({ note })
          },
        )
      },
    })
  }, 60_000)
  afterAll(async () => {
    // The aborted fetches leave undici a spare connection that never carries a request, which the
    // server's close would wait for.
    t?.app.server.closeAllConnections()
    await t?.close()
    await postgres?.destroy()
  })

  const notes = async () =>
    (await postgres.sql<{ note: string }>('select note from deadline_probe order by note')).map(
      (row) => row.note,
    )
  const slowWrite = (query: string, timeoutMs?: number) =>
    new TestClient(t.baseUrl).post(`/test/slow-write?${query}`, undefined, { timeoutMs })

  it('within its deadline, the write is done', async () => {
    expect((await slowWrite('sleep=0.1&note=quick&transaction=1')).status).toBe(201)
    expect((await slowWrite('sleep=0.1&note=quick-plain')).status).toBe(201)
    expect(await notes()).toEqual(['quick', 'quick-plain'])
  })

  it('past its deadline: 503, and its transaction rolled back instead of committed', async () => {
    for (const query of ['sleep=1&note=late&transaction=1', 'sleep=1&note=late-plain']) {
      const res = await slowWrite(query)
      expect(res.status).toBe(503)
      expect(res.data).toEqual({ message: 'Service Unavailable' })
    }
    expect(await notes()).toEqual(['quick', 'quick-plain'])
  })

  it('its client gone: nothing is written after the client stopped waiting', async () => {
    for (const query of ['sleep=0.5&note=gone&transaction=1', 'sleep=0.5&note=gone-plain']) {
      const answer = await slowWrite(query, 200).then(
        (res) => res.status,
        (error: Error) => error.name,
      )
      expect(answer).toBe('TimeoutError')
    }
    await sleep(800)
    expect(await notes()).toEqual(['quick', 'quick-plain'])
  })
})
