import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { eq, type SQL, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { buildTestApp } from '../test/helpers/build-test-app.ts'
import { type CliEnvironment, createCliEnvironment } from '../test/helpers/cli.ts'
import { TestClient } from '../test/helpers/client.ts'
import { createUser, uniqueEmail } from '../test/helpers/factories.ts'
import { projectRoot } from '../test/helpers/project-root.ts'
import { openConfiguredDatabase } from './app.ts'
import { type Config, loadConfig } from './config.ts'
import type { Database } from './db/client.ts'
import { users } from './db/schema/index.ts'
import { encryptSecret } from './lib/encryption.ts'

const migrationCount = JSON.parse(readFileSync(join(projectRoot, 'drizzle/meta/_journal.json'), 'utf8'))
  .entries.length as number

let cliEnv: CliEnvironment
const cli = (args: string[], extraEnv?: Record<string, string>) => cliEnv.run(args, extraEnv)

/** Raw SQL rows; PGlite and node-postgres both answer `{ rows }`, which the shared Db type leaves unknown. */
async function rows<T>(database: Database, query: SQL): Promise<T[]> {
  return ((await database.db.execute(query)) as { rows: T[] }).rows
}

/** The config the CLI child sees. */
const childConfig = (): Config => loadConfig(cliEnv.env, projectRoot)

beforeAll(async () => {
  // Unmigrated: the first test is of `migrate` itself.
  cliEnv = await createCliEnvironment({ empty: true })
})

afterAll(() => cliEnv.cleanup())

describe('cli migrate', () => {
  test('applies the migrations, and a second run is a no-op', { timeout: 120_000 }, async () => {
    for (let run = 0; run < 2; run++) {
      const result = await cli(['migrate'])
      expect(result).toMatchObject({ code: 0, stderr: '' })
      expect(result.stdout).toMatch(/^Migrations applied \((PGlite|PostgreSQL) .+\)\.\n$/)
    }
    const database = await openConfiguredDatabase(childConfig())
    try {
      const tables = await rows<{ table_name: string }>(
        database,
        sql`select table_name from information_schema.tables where table_schema = 'public'`,
      )
      expect(tables.map((row) => row.table_name)).toEqual(expect.arrayContaining(['users', 'sessions']))
      const applied = await rows<{ count: number }>(
        database,
        sql`select count(*)::int as count from drizzle.__drizzle_migrations`,
      )
      expect(applied).toEqual([{ count: migrationCount }])
    } finally {
      await database.close()
    }
  })
})

describe('cli users:create', () => {
  const password = 'long enough secret'
  let admin: Record<string, unknown>

  test('creates a verified admin and prints it as JSON, without the password', {
    timeout: 60_000,
  }, async () => {
    const result = await cli([
      'users:create',
      '--name',
      'Ada Lovelace',
      '--email',
      'Ada@Example.COM',
      '--password',
      password,
      '--admin',
      '--verified',
    ])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout).not.toMatch(/password|argon2|\$2y\$/i)
    admin = JSON.parse(result.stdout)
    expect(admin).toEqual({
      id: expect.any(Number),
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      email_verified_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      is_admin: true,
      two_factor_enabled: false,
      profile_photo_url: null,
      phone: null,
      timezone: null,
      country: null,
      available_credits: 0,
      held_credits: 0,
      credits_available_for_automation: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
  })

  test('without --admin and --verified the user is neither', { timeout: 60_000 }, async () => {
    const result = await cli([
      'users:create',
      '--name',
      'Bob',
      '--email',
      'bob@example.com',
      '--password',
      password,
    ])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(JSON.parse(result.stdout)).toMatchObject({
      name: 'Bob',
      email: 'bob@example.com',
      is_admin: false,
      email_verified_at: null,
    })
  })

  test('the created user signs in to the app over HTTP', { timeout: 60_000 }, async () => {
    const t = await buildTestApp({ database: await openConfiguredDatabase(childConfig()) })
    try {
      const client = new TestClient(t.baseUrl)
      const wrong = await client.post('/api/login', {
        email: 'ada@example.com',
        password: 'not the password',
      })
      expect(wrong.status).toBe(422)
      const login = await client.post('/api/login', { email: 'ADA@example.com', password })
      expect(login.status).toBe(200)
      const me = await client.get('/api/user')
      expect(me.status).toBe(200)
      expect(me.data).toEqual(admin)
    } finally {
      await t.close()
    }
  })

  test('a taken email (in any case) exits 1 naming email', { timeout: 60_000 }, async () => {
    const result = await cli([
      'users:create',
      '--name',
      'Ada',
      '--email',
      'ADA@example.com',
      '--password',
      password,
    ])
    expect(result).toEqual({ code: 1, stdout: '', stderr: 'email: The email has already been taken.\n' })
  })

  test.each([
    [
      'a bad email',
      ['--name', 'Eve', '--email', 'not-an-email', '--password', password],
      'email: The email field must be a valid email address.',
    ],
    [
      'a short password',
      ['--name', 'Eve', '--email', 'eve@example.com', '--password', 'short'],
      'password: The password field must be at least 8 characters.',
    ],
    [
      'a missing --name',
      ['--email', 'eve@example.com', '--password', password],
      'name: The name field is required.',
    ],
  ])('%s exits 1 with a message naming the field', async (_, args, message) => {
    const result = await cli(['users:create', ...args])
    expect(result).toEqual({ code: 1, stdout: '', stderr: `${message}\n` })
  })

  test('an unknown flag exits 1 naming it', async () => {
    const result = await cli(['users:create', '--name', 'Eve', '--email', 'eve@example.com', '--nope'])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain("Unknown option '--nope'")
  })
})

describe('cli two-factor:clear-unreadable', () => {
  const sha256 = (code: string) => createHash('sha256').update(code).digest('hex')
  /** Recovery codes as the service stores them: hashes, plus the list sealed under `appKey`. */
  const storedCodes = (codes: string[], appKey: string) =>
    JSON.stringify({ hashes: codes.map(sha256), sealed: encryptSecret(JSON.stringify(codes), appKey) })
  // What an import of the Laravel original holds: its encrypter's base64 JSON {iv, value, mac, tag}.
  const laravelSealed = Buffer.from(
    JSON.stringify({ iv: 'aXY=', value: 'dmFsdWU=', mac: 'm', tag: '' }),
  ).toString('base64')
  const OTHER_KEY = `base64:${Buffer.alloc(32, 9).toString('base64')}`
  const codes = ['AAAAAAAAAA-BBBBBBBBBB', 'CCCCCCCCCC-DDDDDDDDDD']
  const ids = { readable: 0, imported: 0, rotatedCodes: 0 }

  const twoFactorOf = async (id: number) => {
    const database = await openConfiguredDatabase(childConfig())
    try {
      const [row] = await database.db.select().from(users).where(eq(users.id, id))
      return (
        row && {
          secret: row.twoFactorSecret,
          codes: row.twoFactorRecoveryCodes,
          confirmed: row.twoFactorConfirmedAt !== null,
        }
      )
    } finally {
      await database.close()
    }
  }

  beforeAll(async () => {
    expect((await cli(['migrate'])).code).toBe(0)
    const database = await openConfiguredDatabase(childConfig())
    try {
      const key = childConfig().appKey
      const secret = encryptSecret('JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP', key)
      const setUp = async (twoFactorSecret: string, twoFactorRecoveryCodes: string) => {
        const { user } = await createUser(database.db, { email: uniqueEmail('two-factor') })
        await database.db
          .update(users)
          .set({ twoFactorSecret, twoFactorRecoveryCodes, twoFactorConfirmedAt: new Date() })
          .where(eq(users.id, user.id))
        return user.id
      }
      ids.readable = await setUp(secret, storedCodes(codes, key))
      ids.imported = await setUp(laravelSealed, laravelSealed)
      ids.rotatedCodes = await setUp(secret, storedCodes(codes, OTHER_KEY))
    } finally {
      await database.close()
    }
  }, 120_000)

  test('--dry-run names the accounts and changes nothing', { timeout: 60_000 }, async () => {
    const before = await twoFactorOf(ids.imported)
    const result = await cli(['two-factor:clear-unreadable', '--dry-run'])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout).toBe(
      `Unreadable 2FA setups would be cleared: 1 (user ids: ${ids.imported}).\n` +
        `Unreadable recovery codes would be cleared: 1 (user ids: ${ids.rotatedCodes}).\n`,
    )
    expect(await twoFactorOf(ids.imported)).toEqual(before)
  })

  test('clears what APP_KEY cannot read, keeps what it can; a second run finds nothing', {
    timeout: 60_000,
  }, async () => {
    const readable = await twoFactorOf(ids.readable)
    const rotated = await twoFactorOf(ids.rotatedCodes)
    const result = await cli(['two-factor:clear-unreadable'])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout).toBe(
      `Unreadable 2FA setups cleared: 1 (user ids: ${ids.imported}).\n` +
        `Unreadable recovery codes cleared: 1 (user ids: ${ids.rotatedCodes}).\n`,
    )
    // The imported setup is gone whole (2FA off until the user enrols again).
    expect(await twoFactorOf(ids.imported)).toEqual({ secret: null, codes: null, confirmed: false })
    // Only the unreadable codes went: the secret and 2FA stay on.
    expect(await twoFactorOf(ids.rotatedCodes)).toEqual({ ...rotated, codes: null })
    expect(await twoFactorOf(ids.readable)).toEqual(readable)

    const again = await cli(['two-factor:clear-unreadable'])
    expect(again.stdout).toBe('Unreadable 2FA setups cleared: 0.\nUnreadable recovery codes cleared: 0.\n')
  })
})

describe('cli', () => {
  test('key:generate prints a base64: key of 32 bytes, even where the environment lacks one', async () => {
    // Production without APP_KEY is the very environment that needs this command.
    const result = await cli(['key:generate'], { NODE_ENV: 'production', APP_KEY: '' })
    expect(result).toMatchObject({ code: 0, stderr: '' })
    const match = /^base64:(\S+)\n$/.exec(result.stdout)
    expect(match).not.toBeNull()
    expect(Buffer.from(match?.[1] ?? '', 'base64')).toHaveLength(32)
    const key = result.stdout.trim()
    expect(
      loadConfig(
        {
          NODE_ENV: 'production',
          APP_KEY: key,
          UPSTREAM_BASE_URL: 'https://upstream.test',
          REVERB_APP_ID: '1',
          REVERB_APP_KEY: 'key',
          REVERB_APP_SECRET: 'a-secret-of-sixteen+',
        },
        cliEnv.dataDir,
      ).appKey,
    ).toBe(key)
  })

  test('an unknown command prints the usage and exits 1', async () => {
    const result = await cli(['users:delete'])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain('Unknown command "users:delete"')
    expect(result.stderr).toContain('Usage: npm run cli -- <command>')
  })

  test('--help prints the usage and exits 0', async () => {
    const result = await cli(['--help'])
    expect(result).toMatchObject({ code: 0, stderr: '' })
    expect(result.stdout).toMatch(/^Usage: npm run cli -- <command>/)
    for (const command of ['migrate', 'users:create', 'key:generate'])
      expect(result.stdout).toContain(command)
  })

  test('a bad environment prints the problem and exits 1', async () => {
    const result = await cli(['migrate'], { PORT: 'abc' })
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toMatch(/^Invalid configuration:\n {2}- PORT: /)
  })
})
