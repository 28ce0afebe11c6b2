// Writes docs/configuration.md's variable tables from the records in src/config-variables.ts.
// `--check`: writes nothing, exits 1 when the committed tables differ.
import { readFileSync, writeFileSync } from 'node:fs'
import { withVariablesMarkdown } from '../src/config-docs.ts'

const path = new URL('../docs/configuration.md', import.meta.url)
const current = readFileSync(path, 'utf8')
const generated = withVariablesMarkdown(current)
if (process.argv.includes('--check')) {
  if (generated !== current) {
    console.error('docs/configuration.md is out of date: run `npm run docs:config`')
    process.exitCode = 1
  }
} else if (generated !== current) {
  writeFileSync(path, generated)
  console.log('docs/configuration.md: variable tables regenerated')
}
