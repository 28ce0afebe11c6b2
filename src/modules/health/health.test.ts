import { afterEach, describe, expect, it } from 'vitest'
import { buildTestApp, type TestApp } from '../../../test/helpers/build-test-app.ts'
import {
  createServerDatabase,
  openTestDatabase,
  sharedDatabase,
} from '../../../test/helpers/test-database.ts'
import { type Database, openDatabase } from '../../db/client.ts'

let t: TestApp | undefined
afterEach(async () => {
  await t?.close()
  t = undefined
})

// One migrated database for the tests below (opening one takes seconds); the last one closes it.
let fileDatabase: Database | undefined
const testDatabase = async () => {
  fileDatabase ??= await openTestDatabase()
  return fileDatabase
}

async function probe(baseUrl: string, path = '/up') {
  const res = await fetch(`${baseUrl}${path}`)
  return { status: res.status, body: (await res.json()) as Record<string, any> }
}
const up = (baseUrl: string) => probe(baseUrl, '/up')

/**
 * The database gone: every probe still answers 200 (the database is shared; taking this instance out
 * of rotation would not help), promptly, and the readiness body says the database is down.
 */
async function expectDatabaseDownReported(baseUrl: string) {
  for (const path of ['/readyz', '/up']) {
    const started = Date.now()
    const { status, body } = await probe(baseUrl, path)
    expect(Date.now() - started).toBeLessThan(2_000)
    expect(status).toBe(200)
    expect(body).toMatchObject({ status: 'ok', dependencies: { database: { up: false } } })
    expect(body.dependencies.database.error).toEqual(expect.any(String))
  }
  expect(await probe(baseUrl, '/livez')).toEqual({ status: 200, body: { status: 'ok' } })
  expect((await fetch(`${baseUrl}/api/no-such-thing`)).status).toBe(404)
}

describe('GET /livez, /readyz and /up', () => {
  it('answers 503 {"status":"stopping"} from the stop on, while other answers close their connection until the listener goes', async () => {
    const app = await buildTestApp({
      env: { SHUTDOWN_GRACE_MS: '800' },
      database: sharedDatabase(await testDatabase()),
    })
    t = app
    const plain = await fetch(`${app.baseUrl}/guard/csrf-cookie`)
    expect(plain.status).toBe(204)
    expect(plain.headers.get('connection')).not.toBe('close')

    const started = Date.now()
    const stopped = app.app.shutdown.stop()
    expect(await up(app.baseUrl)).toMatchObject({ status: 503, body: { status: 'stopping' } })
    expect(await probe(app.baseUrl, '/readyz')).toMatchObject({ status: 503, body: { status: 'stopping' } })
    // Alive all the same: a restart would not help a stopping instance.
    expect(await probe(app.baseUrl, '/livez')).toEqual({ status: 200, body: { status: 'ok' } })
    // Served as before, but each answer closes its (kept-alive) connection.
    const during = await fetch(`${app.baseUrl}/guard/csrf-cookie`)
    expect(during.status).toBe(204)
    expect(during.headers.get('connection')).toBe('close')
    expect((await fetch(`${app.baseUrl}/api/no-such-thing`)).headers.get('connection')).toBe('close')

    // The listener closes once the grace period is over, not before.
    await stopped
    t = undefined
    expect(Date.now() - started).toBeGreaterThanOrEqual(800)
    const refused = await fetch(`${app.baseUrl}/up`).catch((error: Error) => error.cause)
    expect(refused).toMatchObject({ code: 'ECONNREFUSED' })
  })

  it('answers 200 with the database up while it answers, and still 200 with it reported down once it is closed', async () => {
    // The app is given the database, so the test can take it away.
    const database = await testDatabase()
    t = await buildTestApp({ database })
    for (const path of ['/readyz', '/up']) {
      expect(await probe(t.baseUrl, path)).toMatchObject({
        status: 200,
        body: { status: 'ok', dependencies: { database: { up: true }, upstream: { up: true } } },
      })
    }

    await database.close()
    await expectDatabaseDownReported(t.baseUrl)
  })
})

// On PostgreSQL the server can also go away under an open pool: its connections are terminated.
const postgresServerUrl = process.env.TEST_DATABASE_URL
describe.each(postgresServerUrl ? [postgresServerUrl] : [])('GET /up on PostgreSQL', (serverUrl) => {
  it('reports the database down, still answering 200, when it is dropped under the open connection pool', async () => {
    const target = await createServerDatabase(serverUrl)
    try {
      const database = await openDatabase({ url: target.url })
      await database.migrate()
      t = await buildTestApp({ database })
      expect(await up(t.baseUrl)).toMatchObject({
        status: 200,
        body: { dependencies: { database: { up: true } } },
      })

      await target.drop()
      await expectDatabaseDownReported(t.baseUrl)
    } finally {
      await t?.close()
      t = undefined
      await target.drop()
    }
  })
})
