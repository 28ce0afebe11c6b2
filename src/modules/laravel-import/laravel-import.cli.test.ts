import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type CliEnvironment, createCliEnvironment } from '../../../test/helpers/cli.ts'
import { type LaravelFixture, seedLaravelOriginal } from '../../../test/helpers/laravel-fixture.ts'
import { createLaravelOriginal, type LaravelOriginal } from '../../../test/helpers/laravel-original.ts'
import { projectRoot } from '../../../test/helpers/project-root.ts'
import { openConfiguredDatabase } from '../../app.ts'
import { loadConfig } from '../../config.ts'

// `npm run cli -- import:laravel` as an operator runs it: a child process, a SQLite original.

let cliEnv: CliEnvironment
let original: LaravelOriginal
let fixture: LaravelFixture
const photosDir = mkdtempSync(join(tmpdir(), 'laravel-public-'))

beforeAll(async () => {
  cliEnv = await createCliEnvironment()
  original = await createLaravelOriginal('sqlite')
  fixture = await seedLaravelOriginal(original, photosDir, Math.floor(Date.now() / 1000))
})

afterAll(async () => {
  await original?.destroy()
  await cliEnv?.cleanup()
  rmSync(photosDir, { recursive: true, force: true })
})

/** How many rows each table the import writes holds, in the CLI's database. */
async function counts() {
  const database = await openConfiguredDatabase(loadConfig(cliEnv.env, projectRoot))
  try {
    const result = (await database.db.execute(
      sql`select (select count(*) from users)::int as users, (select count(*) from laravel_imported_users)::int as links, (select count(*) from sessions)::int as sessions`,
    )) as unknown as { rows: Array<{ users: number; links: number; sessions: number }> }
    return result.rows[0]
  } finally {
    await database.close()
  }
}

const photoFiles = () => {
  const dir = join(cliEnv.dataDir, 'profile-photos')
  return existsSync(dir) ? readdirSync(dir) : []
}

describe('cli import:laravel', () => {
  test('without --from or a key, says what is missing and exits 1', { timeout: 60_000 }, async () => {
    const result = await cliEnv.run(['import:laravel'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('from: The from field is required')
    expect(result.stderr).toContain('app-key: The app key field is required')
    const wrongScheme = await cliEnv.run([
      'import:laravel',
      '--from',
      'oracle://db/app',
      '--app-key',
      fixture.keys.current,
    ])
    expect(wrongScheme.code).toBe(1)
    expect(wrongScheme.stderr).toContain('--from takes mysql://')
  })

  test('--dry-run prints what would be imported and why not, and writes nothing', {
    timeout: 60_000,
  }, async () => {
    const result = await cliEnv.run([
      'import:laravel',
      '--from',
      original.url,
      '--app-key',
      fixture.keys.current,
      '--previous-keys',
      fixture.keys.previous,
      '--photos',
      photosDir,
      '--sessions',
      '--dry-run',
    ])
    expect(result.stderr).toBe('')
    // Some users would be skipped: exit 2, as import:laravel-credits with lines it cannot import.
    expect(result.code).toBe(2)
    const { users } = fixture
    expect(result.stdout).toContain(`user ${users.erin.id}: would be skipped (two-factor-key)`)
    expect(result.stdout).toContain(`user ${users.ivan.id}: would be skipped (duplicate-email)`)
    expect(result.stdout).toContain(
      `user ${users.frank.id}: would be imported without its photo (photo-missing)`,
    )
    expect(result.stdout).toContain('(dry run: nothing was written)')
    expect(result.stdout).toContain(
      'Users: 10 in the original; 7 would be imported (2 with two-factor on, 1 with two-factor set up but not confirmed), 0 already imported, 3 skipped',
    )
    expect(result.stdout).toContain('Sessions: 4 live; 2 would be imported')
    expect(await counts()).toEqual({ users: 0, links: 0, sessions: 0 })
    expect(photoFiles()).toEqual([])
  })

  test('imports with the keys from LARAVEL_APP_KEY and LARAVEL_PREVIOUS_KEYS; a second run adds nothing', {
    timeout: 60_000,
  }, async () => {
    const args = ['import:laravel', '--from', original.url, '--photos', photosDir, '--sessions']
    const env = { LARAVEL_APP_KEY: fixture.keys.current, LARAVEL_PREVIOUS_KEYS: fixture.keys.previous }
    const first = await cliEnv.run(args, env)
    expect(first.stderr).toBe('')
    expect(first.code).toBe(2)
    expect(first.stdout).toContain('Users: 10 in the original; 7 imported (2 with two-factor on')
    expect(first.stdout).toContain('Sessions: 4 live; 2 imported, 0 already imported, 2 skipped')
    expect(await counts()).toEqual({ users: 7, links: 7, sessions: 2 })
    expect(photoFiles()).toHaveLength(1)

    const second = await cliEnv.run(args, env)
    expect(second.code).toBe(2)
    expect(second.stdout).toContain(
      '0 imported (0 with two-factor on, 0 with two-factor set up but not confirmed), 7 already imported',
    )
    expect(second.stdout).toContain('0 imported, 2 already imported')
    expect(await counts()).toEqual({ users: 7, links: 7, sessions: 2 })
    // Never a key, a session id or its token in what the operator sees.
    for (const secret of [
      fixture.keys.current,
      fixture.keys.previous,
      fixture.sessions.bob.id,
      fixture.sessions.bob.token,
    ]) {
      expect(first.stdout + first.stderr + second.stdout + second.stderr).not.toContain(secret)
    }
  })
})
