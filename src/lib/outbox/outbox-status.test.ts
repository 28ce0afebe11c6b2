import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type CliEnvironment, createCliEnvironment } from '../../../test/helpers/cli.ts'
import { projectRoot } from '../../../test/helpers/project-root.ts'
import { openConfiguredDatabase } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import { outbox } from '../../db/schema/index.ts'

let cliEnv: CliEnvironment
beforeAll(async () => {
  cliEnv = await createCliEnvironment()
})
afterAll(() => cliEnv.cleanup())

const header = /^Outbox \((PGlite|PostgreSQL) .+\)\n/

describe('cli outbox:status', () => {
  test('prints the pending, failed and sent counts and how long the oldest pending mail has waited', {
    timeout: 120_000,
  }, async () => {
    const empty = await cliEnv.run(['outbox:status'])
    expect(empty).toMatchObject({ code: 0, stderr: '' })
    expect(empty.stdout).toMatch(header)
    expect(empty.stdout.replace(header, '')).toBe('pending: 0\nfailed: 0\nsent: 0\noldest pending: none\n')

    // The CLI's own database (a PGlite folder cannot be open in two processes, so it is closed again).
    const database = await openConfiguredDatabase(loadConfig(cliEnv.env, projectRoot))
    const now = Date.now()
    const oldest = new Date(now - 90_000)
    const mail = (to: string) => ({ kind: 'mail', payload: { to, subject: 'Hi', sealed: 'x' } })
    try {
      await database.db.insert(outbox).values([
        { ...mail('a@example.com'), availableAt: oldest, createdAt: oldest },
        {
          ...mail('b@example.com'),
          attempts: 3,
          availableAt: new Date(now),
          createdAt: new Date(now - 5_000),
        },
        { ...mail('c@example.com'), attempts: 10, availableAt: oldest, createdAt: oldest, failedAt: oldest },
        { ...mail('d@example.com'), attempts: 1, availableAt: oldest, createdAt: oldest, sentAt: oldest },
      ])
    } finally {
      await database.close()
    }

    const result = await cliEnv.run(['outbox:status'])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    const report = result.stdout.replace(header, '')
    const age = Number(report.match(/queued (\d+) s ago/)?.[1])
    expect(report).toBe(
      `pending: 2\nfailed: 1\nsent: 1\noldest pending: queued ${age} s ago (${oldest.toISOString()})\n`,
    )
    // 90 s old when written, plus however long the CLI took to start.
    expect(age).toBeGreaterThanOrEqual(90)
    expect(age).toBeLessThan(90 + 60)
  })

  test('refuses arguments it does not know', async () => {
    const result = await cliEnv.run(['outbox:status', '--verbose'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('Usage: npm run cli -- <command>')
  })
})
