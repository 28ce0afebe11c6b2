import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { projectRoot } from '../../test/helpers/project-root.ts'
import type { DatabaseTarget } from './client.ts'

const run = promisify(execFile)

/** The modules a fresh Node process resolves while it opens (and closes) the database `target` names. */
async function modulesLoadedOpening(target: DatabaseTarget): Promise<string[]> {
  const script = `
    import { registerHooks } from 'node:module'
    const seen = []
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r } })
    const { openDatabase } = await import(${JSON.stringify(join(projectRoot, 'src/db/client.ts'))})
    const database = await openDatabase(${JSON.stringify(target)})
    await database.close()
    console.log(JSON.stringify(seen))
  `
  const { stdout } = await run(
    join(projectRoot, 'node_modules/.bin/node'),
    ['--input-type=module', '-e', script],
    {
      cwd: projectRoot,
    },
  )
  return JSON.parse(stdout) as string[]
}

const isPglite = (url: string) =>
  url.includes('/@electric-sql/pglite/') || url.includes('/drizzle-orm/pglite/')

describe('opening the database', () => {
  it('loads PGlite only for the embedded database, never on PostgreSQL', async () => {
    // The pool connects on its first query, so no server needs to answer at this address.
    const [embedded, postgres] = await Promise.all([
      modulesLoadedOpening({ memory: true }),
      modulesLoadedOpening({ url: 'postgres://nobody@127.0.0.1:1/none' }),
    ])
    expect(embedded.some(isPglite)).toBe(true)
    expect(postgres.filter(isPglite)).toEqual([])
    expect(postgres.some((url) => url.includes('/node_modules/pg/'))).toBe(true)
  }, 60_000)
})
