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

async function up(baseUrl: string) {
  const res = await fetch(`${baseUrl}/up`)
  return { status: res.status, body: await res.json() }
}

async function expectUnavailable(baseUrl: string) {
  const started = Date.now()
  expect(await up(baseUrl)).toEqual({ status: 503, body: { status: 'unavailable' } })
  // The probe answers promptly rather than hanging on the dead database.
  expect(Date.now() - started).toBeLessThan(5_000)
  // Still 503 on the next probe, and the rest of the app keeps serving.
  expect(await up(baseUrl)).toEqual({ status: 503, body: { status: 'unavailable' } })
  expect((await fetch(`${baseUrl}/api/no-such-thing`)).status).toBe(404)
}

describe('GET /up', () => {
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
    expect(await up(app.baseUrl)).toEqual({ status: 503, body: { status: 'stopping' } })
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

  it('answers 200 {"status":"ok"} while the database answers, 503 {"status":"unavailable"} once it is closed', async () => {
    // The app is given the database, so the test can take it away.
    const database = await testDatabase()
    t = await buildTestApp({ database })
    expect(await up(t.baseUrl)).toEqual({ status: 200, body: { status: 'ok' } })

    await database.close()
    await expectUnavailable(t.baseUrl)
  })
})

// On PostgreSQL the server can also go away under an open pool: its connections are terminated.
const postgresServerUrl = process.env.TEST_DATABASE_URL
describe.each(postgresServerUrl ? [postgresServerUrl] : [])('GET /up on PostgreSQL', (serverUrl) => {
  it('answers 503 when the database is dropped under the open connection pool', async () => {
    const target = await createServerDatabase(serverUrl)
    try {
      const database = await openDatabase({ url: target.url })
      await database.migrate()
      t = await buildTestApp({ database })
      expect(await up(t.baseUrl)).toEqual({ status: 200, body: { status: 'ok' } })

      await target.drop()
      await expectUnavailable(t.baseUrl)
    } finally {
      await t?.close()
      t = undefined
      await target.drop()
    }
  })
})
