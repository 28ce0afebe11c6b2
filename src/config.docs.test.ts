import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { projectRoot } from '../test/helpers/project-root.ts'
import { CONFIG_VARIABLES } from './config.ts'
import { withVariablesMarkdown } from './config-docs.ts'
import { NODE_VARIABLES } from './config-variables.ts'

describe('docs/configuration.md', () => {
  const text = readFileSync(join(projectRoot, 'docs/configuration.md'), 'utf8')

  it('has the variable tables the records generate (`npm run docs:config` rewrites them)', () => {
    expect(text).toBe(withVariablesMarkdown(text))
  })

  it('has one row for every variable the loader reads (and those Node reads), and no other', () => {
    const rows = [...text.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1])
    expect(rows.length).toBe(new Set(rows).size)
    expect(rows.sort()).toEqual([...CONFIG_VARIABLES, ...Object.keys(NODE_VARIABLES)].sort())
  })
})
