import { enableCompileCache } from 'node:module'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { type Config, ConfigError, generateAppKey, loadConfig } from './config.ts'
import type { Database } from './db/client.ts'
import { systemClock } from './lib/clock.ts'
import { ValidationError } from './lib/errors.ts'
import { speedUpDrizzleImports } from './lib/fast-imports.ts'
import { compileValidator, type FieldErrors } from './lib/validation.ts'
import { RegisterBody } from './modules/auth/auth.schemas.ts'
import type { CreditsFile } from './modules/laravel-import/credit-file.ts'
import { presentUser } from './modules/users/users.presenters.ts'

// Admin CLI: `npm run cli -- <command>`. Each command answers its process exit code.

// As server.ts does: compiled code reused across runs, and drizzle-orm (imported by the commands
// below, dynamically) resolved without Node's costly package lookups.
enableCompileCache()
speedUpDrizzleImports()

const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  migrate                                  apply pending database migrations
  users:create --name <name> --email <email> --password <password> [--admin] [--verified]
                                           create a user, validated like registration
  key:generate                             print a new APP_KEY
  kb:sync [--dir <folder>]                 sync the knowledge base articles (default content/knowledge-base/)
  outbox:status                            print pending and failed outbox rows (mail waiting or given up)
  two-factor:clear-unreadable [--dry-run]  clear 2FA secrets and recovery codes APP_KEY cannot read (imported
                                           from the Laravel original, or after a key rotation)
  ledger:export --from <date> --to <date> [--user <id>] [--format csv|jsonl]
                                           write the credits ledger rows of the period to stdout (default csv);
                                           --from inclusive, --to exclusive (a bare date --to: up to the end of
                                           that day, UTC); dates YYYY-MM-DD or ISO 8601 timestamps (UTC unless
                                           an offset says)
  ledger:audit                             check the credits ledger's invariants; exit 2 with a report naming
                                           each broken check (exit 0: all hold)
  import:laravel --from <url> [--app-key <key>] [--previous-keys <keys>] [--photos <folder>] [--sessions]
                 [--session-serialization php|json] [--dry-run] [--batch-size <n>]
                                           bring the Laravel original's users (passwords, two-factor, photos) and,
                                           with --sessions, its live sessions across; --from mysql://, mariadb://,
                                           postgres:// or sqlite:<path>; keys default to LARAVEL_APP_KEY and
                                           LARAVEL_PREVIOUS_KEYS (docs/migrating-from-laravel.md)
  import:laravel-credits [--balances <file>] [--holds <file>] [--dry-run]
                                           bring balances and open holds across from the Laravel original's CSV
                                           exports (run after its users are imported); exit 2 when some lines
                                           were not imported, each printed with its reason
`

const checkRegistration = compileValidator(RegisterBody)

/** Bad input, as Laravel's validator words it: one `field: message` line each. */
function printProblems(errors: FieldErrors): number {
  for (const [field, messages] of Object.entries(errors)) {
    for (const message of messages) console.error(`${field}: ${message}`)
  }
  return 1
}

function describeDatabase(config: Config): string {
  if (!config.databaseUrl) return `PGlite in ${config.dataDir}/db`
  const url = new URL(config.databaseUrl)
  return `PostgreSQL at ${url.host}${url.pathname}` // never the credentials
}

/** The database (and Fastify, PGlite, argon2) load only for commands that use them, so the rest start fast. */
async function openDatabase(config: Config) {
  const { openConfiguredDatabase } = await import('./app.ts')
  return openConfiguredDatabase(config, { long: true })
}

/** The services the commands use, built as the app builds them (src/core-services.ts). */
async function coreServices(config: Config, database: Database) {
  const { buildCoreServices } = await import('./core-services.ts')
  const { createEventBus } = await import('./lib/events.ts')
  return buildCoreServices({ config, db: database.db, clock: systemClock, events: createEventBus() })
}

async function migrate(args: string[]): Promise<number> {
  parseArgs({ args, strict: true, allowPositionals: false })
  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    console.log(`Migrations applied (${describeDatabase(config)}).`)
    return 0
  } finally {
    await database.close()
  }
}

async function createUser(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      password: { type: 'string' },
      admin: { type: 'boolean', default: false },
      verified: { type: 'boolean', default: false },
    },
  })
  const input: Record<string, string> = {}
  for (const field of ['name', 'email', 'password'] as const) {
    if (values[field] !== undefined) input[field] = values[field]
  }
  const problems = checkRegistration(input)
  if (Object.keys(problems).length > 0) return printProblems(problems)
  const { name, email, password } = input as RegisterBody

  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    const { users } = await coreServices(config, database)
    const user = await users.create({
      name,
      email,
      password,
      isAdmin: values.admin,
      verified: values.verified,
    })
    console.log(JSON.stringify(presentUser(user, { appUrl: config.appUrl }), null, 2))
    return 0
  } catch (error) {
    if (error instanceof ValidationError) return printProblems(error.errors)
    throw error
  } finally {
    await database.close()
  }
}

async function keyGenerate(args: string[]): Promise<number> {
  parseArgs({ args, strict: true, allowPositionals: false })
  console.log(generateAppKey())
  return 0
}

async function kbSync(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: { dir: { type: 'string' } },
  })
  const { defaultKnowledgeBaseDir, KnowledgeBaseContentError } = await import(
    './modules/knowledge-base/knowledge-base.content.ts'
  )
  const dir = values.dir === undefined ? defaultKnowledgeBaseDir : resolve(values.dir)
  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    const kb = (await coreServices(config, database)).knowledgeBase
    const { added, updated, removed, unchanged } = await kb.sync(dir)
    console.log(
      `Knowledge base synced from ${dir}: ${added} added, ${updated} updated, ${removed} removed, ${unchanged} unchanged.`,
    )
    return 0
  } catch (error) {
    if (!(error instanceof KnowledgeBaseContentError)) throw error
    console.error(`${error.message}\nNothing was changed.`)
    return 1
  } finally {
    await database.close()
  }
}

async function outboxStatus(args: string[]): Promise<number> {
  parseArgs({ args, strict: true, allowPositionals: false })
  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    const { createOutboxRepository, formatOutboxStatus } = await import('./lib/outbox/outbox.repository.ts')
    const status = await createOutboxRepository({ db: database.db }).status()
    console.log(`Outbox (${describeDatabase(config)})\n${formatOutboxStatus(status, systemClock.now())}`)
    return 0
  } finally {
    await database.close()
  }
}

/**
 * After importing users from the Laravel original or rotating APP_KEY: 2FA data this key cannot read
 * is cleared (a secret takes the whole setup with it, so those users sign in with their password and
 * enrol again). The ids are printed so they can be told.
 */
async function twoFactorClearUnreadable(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: { 'dry-run': { type: 'boolean', default: false } },
  })
  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    const { twoFactor } = await coreServices(config, database)
    const dryRun = values['dry-run']
    const { secrets, recoveryCodes } = await twoFactor.clearUnreadable({ dryRun })
    const verb = dryRun ? 'would be cleared' : 'cleared'
    const ids = (list: number[]) => (list.length > 0 ? ` (user ids: ${list.join(', ')})` : '')
    console.log(`Unreadable 2FA setups ${verb}: ${secrets.length}${ids(secrets)}.`)
    console.log(`Unreadable recovery codes ${verb}: ${recoveryCodes.length}${ids(recoveryCodes)}.`)
    return 0
  } finally {
    await database.close()
  }
}

/** Streams the period's ledger rows to stdout, a batch at a time (docs/credits.md, "Exporting and auditing the ledger"). */
async function ledgerExport(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      user: { type: 'string' },
      format: { type: 'string' },
    },
  })
  const { parseLedgerExportOptions, writeLedgerExport } = await import('./modules/credits/ledger-export.ts')
  const parsed = parseLedgerExportOptions(values)
  if ('errors' in parsed) return printProblems(parsed.errors)
  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    const { createLedgerExportRepository } = await import('./modules/credits/ledger-export.repository.ts')
    const batches = createLedgerExportRepository({ db: database.db }).batches(parsed.filter)
    await writeLedgerExport(batches, parsed.format, process.stdout)
    return 0
  } catch (error) {
    // The reader went away (`| head`): nothing more to write to, and no stack trace for it.
    if ((error as { code?: unknown }).code !== 'EPIPE') throw error
    console.error('ledger:export: the output was closed before the export ended.')
    return 1
  } finally {
    await database.close()
  }
}

/** Runs the ledger checks; exit 2 with the report when one fails, for a nightly job to notice. */
async function ledgerAudit(args: string[]): Promise<number> {
  parseArgs({ args, strict: true, allowPositionals: false })
  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    const { auditLedger } = await import('./modules/credits/ledger-audit.ts')
    const { formatLedgerAudit } = await import('./modules/credits/ledger-audit-report.ts')
    const audit = await auditLedger(database.db)
    const report = formatLedgerAudit(audit, describeDatabase(config))
    if (audit.failed.length === 0) {
      process.stdout.write(report)
      return 0
    }
    process.stderr.write(report)
    return 2
  } finally {
    await database.close()
  }
}

/** `import:laravel`: the Laravel original's users and sessions (docs/migrating-from-laravel.md). */
async function importLaravel(args: string[]): Promise<number> {
  const { IMPORT_COMMAND_OPTIONS, parseImportOptions, runImportCommand } = await import(
    './modules/laravel-import/laravel-import.command.ts'
  )
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: IMPORT_COMMAND_OPTIONS,
  })
  const config = loadConfig()
  const parsed = parseImportOptions(values, config)
  if ('errors' in parsed) return printProblems(parsed.errors)
  const database = await openDatabase(config)
  const { openConfiguredStorage } = await import('./plugins/storage.ts')
  const storage = await openConfiguredStorage(config)
  try {
    await database.migrate()
    const { laravelImport } = await coreServices(config, database)
    return await runImportCommand({
      options: parsed.options,
      service: laravelImport,
      storage: storage.storage,
      target: describeDatabase(config),
      out: process.stdout,
      err: process.stderr,
    })
  } finally {
    storage.close()
    await database.close()
  }
}

/**
 * Credits from the Laravel original's CSV exports (docs/credits.md, "Credits from the Laravel
 * original"): the summary on stdout, each line not imported on stderr; exit 2 when there are any.
 */
async function importLaravelCredits(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    allowPositionals: false,
    options: {
      balances: { type: 'string' },
      holds: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
    },
  })
  if (values.balances === undefined && values.holds === undefined) {
    return printProblems({
      balances: ['Name a balances file (--balances), a holds file (--holds), or both.'],
    })
  }
  const { CreditsFileError, readCreditsFile } = await import('./modules/laravel-import/credit-file.ts')
  const { formatCreditsImportReport } = await import('./modules/laravel-import/credits-import.report.ts')
  const files: { balances?: CreditsFile; holds?: CreditsFile } = {}
  for (const which of ['balances', 'holds'] as const) {
    const path = values[which]
    if (path === undefined) continue
    try {
      files[which] = await readCreditsFile(path)
    } catch (error) {
      return printProblems({
        [which]: [`${path} cannot be read (${(error as { code?: string }).code ?? error}).`],
      })
    }
  }
  const config = loadConfig()
  const database = await openDatabase(config)
  try {
    await database.migrate()
    const { laravelCredits } = await coreServices(config, database)
    const report = await laravelCredits.run({ ...files, dryRun: values['dry-run'] })
    const { summary, problems } = formatCreditsImportReport(report, describeDatabase(config))
    process.stdout.write(summary)
    process.stderr.write(problems)
    return report.problems.length > 0 ? 2 : 0
  } catch (error) {
    if (!(error instanceof CreditsFileError)) throw error
    console.error(`${error.message}\nNothing was imported.`)
    return 1
  } finally {
    await database.close()
  }
}

function isParseArgsError(error: unknown): error is Error {
  return error instanceof Error && String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_')
}

const commands: Record<string, (args: string[]) => Promise<number>> = {
  migrate,
  'users:create': createUser,
  'key:generate': keyGenerate,
  'kb:sync': kbSync,
  'outbox:status': outboxStatus,
  'two-factor:clear-unreadable': twoFactorClearUnreadable,
  'ledger:export': ledgerExport,
  'ledger:audit': ledgerAudit,
  'import:laravel': importLaravel,
  'import:laravel-credits': importLaravelCredits,
}

async function main([command, ...args]: string[]): Promise<number> {
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  const run = commands[command]
  if (!run) {
    console.error(`Unknown command "${command}".\n`)
    process.stderr.write(USAGE)
    return 1
  }
  try {
    return await run(args)
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message)
      return 1
    }
    // parseArgs (strict): an unknown option, a missing value, a stray argument.
    if (isParseArgsError(error)) {
      console.error(`${error.message}\n`)
      process.stderr.write(USAGE)
      return 1
    }
    throw error
  }
}

process.exitCode = await main(process.argv.slice(2))
