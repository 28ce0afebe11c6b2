/**
 * `npm run bench:laravel-import`: `import:laravel` of USERS users, each with two-factor (a secret and
 * eight recovery codes, encrypted as Laravel's encrypter does, AES-256-CBC with its MAC), from a
 * Laravel-shaped SQLite file into PostgreSQL (a throwaway database on BENCH_DATABASE_URL's server,
 * else TEST_DATABASE_URL's), or into in-memory PGlite when neither is set. Every user carries the
 * same bcrypt hash (the import copies hashes, it never computes one), so making the fixture is quick.
 * Timed: the service's run, the same code the CLI runs, with the default batch size. Afterwards the
 * users and links are counted and one imported secret is opened under the new APP_KEY: the bench
 * exits 1 if anything is missing. BENCH_JSON=path writes the figures there.
 */

import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { DatabaseSync, type SQLInputValue } from 'node:sqlite'
import { hashSync } from '@node-rs/bcrypt'
import { sql } from 'drizzle-orm'
import { Secret } from 'otpauth'
import { generateAppKey, loadConfig } from '../src/config.ts'
import { buildCoreServices } from '../src/core-services.ts'
import { type Database, openDatabase } from '../src/db/client.ts'
import { systemClock } from '../src/lib/clock.ts'
import { createEventBus } from '../src/lib/events.ts'
import { laravelKeys } from '../src/lib/laravel-compat/keys.ts'
import { createLocalStorage } from '../src/lib/storage/local.ts'
import { createPhotoCopier } from '../src/modules/laravel-import/photo-copy.ts'
import { openLaravelSource } from '../src/modules/laravel-import/sources/open-source.ts'
import {
  insertStatement,
  LARAVEL_SCHEMA,
  laravelEncrypt,
  laravelTimestamp,
} from '../test/helpers/laravel-schema.ts'
import { onServer, writeBenchJson } from './harness.ts'
import { createTargets } from './targets.ts'

const USERS = Number(process.env.BENCH_LARAVEL_USERS ?? 100_000)
const GOAL_USERS_PER_SECOND = 2_000
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL

const scratch = mkdtempSync(join(os.tmpdir(), 'bench-laravel-import-'))
const oldKey = `base64:${randomBytes(32).toString('base64')}`

/** The original: Laravel's SQLite schema, USERS users with two-factor, written in batches. */
function makeOriginal(file: string): void {
  const db = new DatabaseSync(file)
  for (const statement of LARAVEL_SCHEMA.sqlite) db.exec(statement)
  const hash = hashSync('bench password 1234', { cost: 10 }).replace(/^\$2b\$/, '$2y$')
  const created = laravelTimestamp(new Date('2024-01-01T00:00:00Z'))
  const codes = JSON.stringify(Array.from({ length: 8 }, (_, i) => `code${i}abcde-fghij${i}klmno`))
  db.exec('begin')
  for (let first = 1; first <= USERS; first += 500) {
    const rows = []
    for (let id = first; id < first + 500 && id <= USERS; id++) {
      rows.push({
        id,
        name: `Trader ${id}`,
        email: `trader${id}@example.com`,
        email_verified_at: created,
        password: hash,
        remember_token: randomBytes(30).toString('hex'),
        created_at: created,
        updated_at: created,
        two_factor_secret: laravelEncrypt(new Secret({ size: 10 }).base32, oldKey),
        two_factor_recovery_codes: laravelEncrypt(codes, oldKey),
        two_factor_confirmed_at: created,
        is_admin: false,
      })
    }
    const [query, params] = insertStatement('sqlite', 'users', rows)
    db.prepare(query).run(...(params as SQLInputValue[]))
  }
  db.exec('commit')
  db.close()
}

/** The target: a throwaway PostgreSQL database, or in-memory PGlite; migrated. */
async function openTarget(): Promise<{ database: Database; label: string; drop(): Promise<void> }> {
  if (!SERVER_URL) {
    const database = await openDatabase({ memory: true })
    await database.migrate()
    return { database, label: 'PGlite (in memory)', drop: async () => {} }
  }
  const name = `bench_laravel_${randomBytes(4).toString('hex')}`
  const url = new URL(SERVER_URL)
  await onServer(`create database ${name}`)
  url.pathname = `/${name}`
  const database = await openDatabase({ url: url.toString(), long: true })
  await database.migrate()
  return {
    database,
    label: `PostgreSQL at ${url.host}`,
    drop: () => onServer(`drop database if exists ${name} with (force)`),
  }
}

let failed = false
const file = join(scratch, 'database.sqlite')
const started = Date.now()
makeOriginal(file)
console.log(`fixture: ${USERS.toLocaleString('en-US')} users with two-factor in ${Date.now() - started} ms`)
const target = await openTarget()
try {
  const config = loadConfig({ NODE_ENV: 'test', APP_KEY: generateAppKey(), DATA_DIR: scratch }, scratch)
  const { laravelImport, twoFactor, users } = buildCoreServices({
    config,
    db: target.database.db,
    clock: systemClock,
    events: createEventBus(),
  })
  const source = await openLaravelSource(`sqlite:${file}`)
  const before = process.hrtime.bigint()
  const summary = await laravelImport.run({
    source,
    keys: laravelKeys(oldKey),
    photos: createPhotoCopier({ dir: undefined, storage: createLocalStorage(scratch) }),
    dryRun: false,
  })
  const seconds = Number(process.hrtime.bigint() - before) / 1e9
  await source.close()

  const result = (await target.database.db.execute(
    sql`select (select count(*) from users)::int as users, (select count(*) from laravel_imported_users)::int as links`,
  )) as unknown as { rows: Array<{ users: number; links: number }> }
  const counted = result.rows[0]
  const sample = await users.findByEmail(`trader${USERS}@example.com`)
  const readable = sample ? twoFactor.readability(sample) : undefined
  if (
    summary.users.imported !== USERS ||
    summary.users.twoFactor !== USERS ||
    counted?.users !== USERS ||
    counted.links !== USERS ||
    readable?.secret !== 'readable' ||
    readable.recoveryCodes !== 'readable'
  ) {
    failed = true
    console.error('the import is incomplete:', JSON.stringify({ summary, counted, readable }))
  }
  const rate = USERS / seconds
  console.log(
    `import into ${target.label}: ${USERS.toLocaleString('en-US')} users in ${seconds.toFixed(1)} s, ` +
      `${Math.round(rate).toLocaleString('en-US')} users/s`,
  )
  const targets = createTargets()
  targets.check('laravel-import', rate, '>=', GOAL_USERS_PER_SECOND, { unit: ' users/s', digits: 0 })
  writeBenchJson('laravel-import', {
    users: USERS,
    seconds,
    users_per_second: rate,
    target: target.label,
    targets: targets.results,
  })
} finally {
  await target.database.close()
  await target.drop()
  rmSync(scratch, { recursive: true, force: true })
}
process.exitCode = failed ? 1 : 0
