import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildTestApp } from '../../../../test/helpers/build-test-app.ts'
import { openTestDatabase, sharedDatabase } from '../../../../test/helpers/test-database.ts'
import type { Database } from '../../../db/client.ts'
import { aiCalls } from '../../../db/schema/index.ts'
import { INTERRUPTED_REASON } from './ai-call-recorder.ts'

// A process that stops mid-call (a crash, a kill) cannot close its ai_calls row; the next instance to
// start does, once the row is older than any call may last.

let database: Database
beforeAll(async () => {
  database = await openTestDatabase()
})
afterAll(() => database.close())

it('records calls left streaming by a stopped server as failed at the next start, and only those', async () => {
  const timeoutMs = 30_000
  const now = Date.now()
  const row = (ageMs: number) => ({
    userId: null,
    source: 'support' as const,
    model: 'offline-knowledge-base',
    status: 'streaming' as const,
    createdAt: new Date(now - ageMs),
  })
  const [stale, recent, done] = await database.db
    .insert(aiCalls)
    .values([
      row(timeoutMs + 61_000),
      // Younger than a call may last: another instance may still be making it.
      row(timeoutMs),
      { ...row(3_600_000), status: 'completed' as const },
    ])
    .returning({ id: aiCalls.id })

  const t = await buildTestApp({
    database: sharedDatabase(database),
    env: { AI_TIMEOUT_MS: String(timeoutMs) },
  })
  try {
    const read = async (id: number | undefined) =>
      (
        await database.db
          .select()
          .from(aiCalls)
          .where(eq(aiCalls.id, id ?? 0))
      )[0]
    expect(await read(stale?.id)).toMatchObject({ status: 'failed', error: INTERRUPTED_REASON })
    expect((await read(stale?.id))?.finishedAt).not.toBeNull()
    expect(await read(recent?.id)).toMatchObject({ status: 'streaming', error: null })
    expect(await read(done?.id)).toMatchObject({ status: 'completed', error: null })
  } finally {
    await t.close()
  }
})
