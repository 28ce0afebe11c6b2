import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { buildTestApp } from '../../../test/helpers/build-test-app.ts'
import { type CliEnvironment, createCliEnvironment } from '../../../test/helpers/cli.ts'
import { signedInClient } from '../../../test/helpers/factories.ts'
import { projectRoot } from '../../../test/helpers/project-root.ts'
import { openConfiguredDatabase } from '../../app.ts'
import { loadConfig } from '../../config.ts'

const shippedCount = readdirSync(join(projectRoot, 'content/knowledge-base')).filter((f) =>
  f.endsWith('.md'),
).length

let contentDir: string
let cliEnv: CliEnvironment
const cli = (args: string[]) => cliEnv.run(args)

function writeArticle(name: string, title: string, area: string, body: string) {
  writeFileSync(join(contentDir, name), `---\ntitle: ${title}\narea: ${area}\n---\n\n${body}\n`)
}

const synced = (counts: string) => `Knowledge base synced from ${contentDir}: ${counts}.\n`

beforeAll(async () => {
  cliEnv = await createCliEnvironment()
  contentDir = mkdtempSync(join(tmpdir(), 'kb-cli-content-'))
})

afterAll(async () => {
  await cliEnv.cleanup()
  rmSync(contentDir, { recursive: true, force: true })
})

describe('cli kb:sync', () => {
  test('adds, then leaves alone, then updates and removes, reporting the counts', {
    timeout: 180_000,
  }, async () => {
    writeArticle('holds.md', 'Credit holds', 'credits', 'Holds reserve credits.')
    writeArticle('buying.md', 'Buying credits', 'credits', 'Packages and checkout.')
    writeArticle('chat.md', 'Chat groups', 'chat', 'Invite people.')
    expect(await cli(['kb:sync', '--dir', contentDir])).toEqual({
      code: 0,
      stdout: synced('3 added, 0 updated, 0 removed, 0 unchanged'),
      stderr: '',
    })
    expect((await cli(['kb:sync', '--dir', contentDir])).stdout).toBe(
      synced('0 added, 0 updated, 0 removed, 3 unchanged'),
    )

    writeArticle('holds.md', 'Credit holds, revised', 'credits', 'Holds reserve credits until orders fill.')
    rmSync(join(contentDir, 'chat.md'))
    writeArticle('support.md', 'Getting help', 'support', 'Write to us.')
    expect((await cli(['kb:sync', '--dir', contentDir])).stdout).toBe(
      synced('1 added, 1 updated, 1 removed, 1 unchanged'),
    )

    // A bad file: exit 1 naming it, and nothing is applied, not even the good change next to it.
    writeFileSync(join(contentDir, 'broken.md'), '---\narea: support\n---\nNo title.\n')
    writeArticle('buying.md', 'Buying credits, changed', 'credits', 'Changed.')
    const bad = await cli(['kb:sync', '--dir', contentDir])
    expect(bad).toEqual({
      code: 1,
      stdout: '',
      stderr: `Knowledge base article ${join(contentDir, 'broken.md')}: title: The title field is required.\nNothing was changed.\n`,
    })

    // The app over the same database serves what the CLI stored.
    rmSync(join(contentDir, 'broken.md'))
    writeArticle('buying.md', 'Buying credits', 'credits', 'Packages and checkout.')
    const database = await openConfiguredDatabase(loadConfig(cliEnv.env, projectRoot))
    const t = await buildTestApp({ database, knowledgeBaseDir: contentDir })
    try {
      const { client } = await signedInClient(t)
      const res = await client.get('/api/knowledge-base')
      expect(res.data.data.map((a: { slug: string; title: string }) => [a.slug, a.title])).toEqual([
        ['buying', 'Buying credits'],
        ['holds', 'Credit holds, revised'],
        ['support', 'Getting help'],
      ])
    } finally {
      await t.close()
    }
  })

  test('without --dir syncs the shipped articles', { timeout: 60_000 }, async () => {
    const result = await cli(['kb:sync'])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(
      `Knowledge base synced from ${join(projectRoot, 'content/knowledge-base')}: ${shippedCount} added, 0 updated, 3 removed, 0 unchanged.\n`,
    )
  })

  test('a folder that cannot be read exits 1 naming it', async () => {
    const missing = join(contentDir, 'nope')
    const result = await cli(['kb:sync', '--dir', missing])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`Knowledge base folder ${missing} cannot be read`)
  })

  test('an unknown option exits 1 with the usage, and --help lists kb:sync', async () => {
    const result = await cli(['kb:sync', '--folder', contentDir])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("Unknown option '--folder'")
    expect(result.stderr).toContain('kb:sync [--dir <folder>]')
    expect((await cli(['--help'])).stdout).toContain('kb:sync [--dir <folder>]')
  })
})
