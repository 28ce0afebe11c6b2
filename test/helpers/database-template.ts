import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestProject } from 'vitest/node'
import { openDatabase } from '../../src/db/client.ts'
import { createServerDatabase } from './test-database.ts'

/**
 * Vitest's global setup: migrates one database per run (PGlite in memory, dumped to a file; or a
 * template database on TEST_DATABASE_URL's server) and removes it after the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (serverUrl) {
    const template = await createServerDatabase(serverUrl, undefined, 'test_template')
    const database = await openDatabase({ url: template.url, poolSize: 1 })
    try {
      await database.migrate()
    } finally {
      await database.close()
    }
    project.provide('databaseTemplate', { kind: 'postgres', name: template.name })
    return template.drop
  }
  const dir = mkdtempSync(join(tmpdir(), 'trading-api-template-'))
  const database = await openDatabase({ memory: true })
  try {
    await database.migrate()
    const dump = await database.dumpDataDir?.()
    if (!dump) throw new Error('PGlite gave no dump of its data folder')
    const dumpFile = join(dir, 'migrated.tar')
    writeFileSync(dumpFile, new Uint8Array(await dump.arrayBuffer()))
    project.provide('databaseTemplate', { kind: 'pglite', dumpFile })
  } finally {
    await database.close()
  }
  return async () => rmSync(dir, { recursive: true, force: true })
}
