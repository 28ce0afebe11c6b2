import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TEST_APP_KEY } from './build-test-app.ts'
import { nodeBin, projectRoot } from './project-root.ts'
import { timedSetup } from './setup-time.ts'
import {
  copyPgliteTemplate,
  createServerDatabase,
  type ServerDatabase,
  templateName,
} from './test-database.ts'

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

export interface CliEnvironment {
  /** The environment the CLI child sees. */
  readonly env: Record<string, string>
  readonly dataDir: string
  /** Set when TEST_DATABASE_URL is: the fresh PostgreSQL database the CLI uses. */
  readonly server: ServerDatabase | undefined
  /** Runs `node src/cli.ts ...args` from the project root, as `npm run cli -- ...args` does. */
  run(args: string[], extraEnv?: Record<string, string>): Promise<CliResult>
  /** Drops the database and removes the data folder. */
  cleanup(): Promise<void>
}

/**
 * A temp DATA_DIR (PGlite under DATA_DIR/db) or, with TEST_DATABASE_URL, a fresh PostgreSQL
 * database, and a runner for the CLI as a real child process against it. The database is a copy of
 * the run's migrated one; `empty` leaves it unmigrated, for the tests of `migrate` itself.
 */
export async function createCliEnvironment(options: { empty?: boolean } = {}): Promise<CliEnvironment> {
  const dataDir = mkdtempSync(join(tmpdir(), 'trading-api-cli-'))
  const serverUrl = process.env.TEST_DATABASE_URL
  const server = serverUrl
    ? await timedSetup(() => createServerDatabase(serverUrl, options.empty ? undefined : templateName()))
    : undefined
  if (!serverUrl && !options.empty) await timedSetup(async () => copyPgliteTemplate(join(dataDir, 'db')))
  const env = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'test',
    APP_KEY: TEST_APP_KEY,
    DATA_DIR: dataDir,
    // Empty counts as unset and wins over a developer's .env in the project root.
    DATABASE_URL: server?.url ?? '',
    REDIS_URL: '',
    MAIL_URL: '',
  }
  return {
    env,
    dataDir,
    server,
    run: (args, extraEnv = {}) =>
      new Promise((resolve) => {
        execFile(
          nodeBin,
          ['src/cli.ts', ...args],
          { cwd: projectRoot, env: { ...env, ...extraEnv } },
          (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
            resolve({ code, stdout, stderr })
          },
        )
      }),
    cleanup: async () => {
      await server?.drop()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
