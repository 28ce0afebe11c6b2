import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { openDatabase } from '../../src/db/client.ts'
import { createServerDatabase } from './test-database.ts'

/**
 * Vitest's global setup: migrates once per run a PGlite database in memory, dumped to a file (what
 * in-memory test databases and the data folders of CLI and server processes start from), and with
 * TEST_DATABASE_URL a template database on that server; removes both after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const serverUrl = process.env.TEST_DATABASE_URL
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-template-'))
  const [pgliteDump, postgres] = await Promise.all([
    dumpMigratedPglite(dir),
    serverUrl ? migratedServerTemplate(serverUrl) : undefined,
  ])
  project.provide('databaseTemplate', { pgliteDump, postgres: postgres?.name })
  return async () => {
    await postgres?.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function dumpMigratedPglite(dir: string): Promise<string> {
  const database = await openDatabase({ memory: true })
  try {
    await database.migrate()
    const dump = await database.dumpDataDir?.()
    if (!dump) throw new Error('PGlite gave no dump of its data folder')
    const dumpFile = join(dir, 'migrated.tar')
    writeFileSync(dumpFile, new Uint8Array(await dump.arrayBuffer()))
    return dumpFile
  } finally {
    await database.close()
  }
}

async function migratedServerTemplate(serverUrl: string) {
  const template = await createServerDatabase(serverUrl, undefined, 'test_template')
  const database = await openDatabase({ url: template.url, poolSize: 1 })
  try {
    await database.migrate()
  } finally {
    await database.close()
  }
  return template
}
