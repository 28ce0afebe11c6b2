import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { projectRoot } from '../test/helpers/cli.ts'
import { CONFIG_VARIABLES } from './config.ts'

// Read by Node itself, not by the loader, and documented beside the rest for the operator.
const READ_BY_NODE = ['NODE_COMPILE_CACHE']

describe('docs/configuration.md', () => {
  it('has one row for every variable the loader reads, and none for a variable it does not', () => {
    const text = readFileSync(join(projectRoot, 'docs/configuration.md'), 'utf8')
    const table = text.slice(text.indexOf('| variable | default | meaning |'))
    const rows = [...table.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1])
    expect(rows.length).toBe(new Set(rows).size)
    expect([...rows].filter((name) => !READ_BY_NODE.includes(name as string)).sort()).toEqual(
      [...CONFIG_VARIABLES].sort(),
    )
  })
})
