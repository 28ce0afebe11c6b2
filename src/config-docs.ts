import { NODE_VARIABLES, VARIABLES } from './config-variables.ts'

// The part of docs/configuration.md generated from the records (`npm run docs:config` rewrites it).
export const TABLE_START =
  '<!-- variables:start: generated from src/config-variables.ts by `npm run docs:config`; edit the records, not this table -->'
export const TABLE_END = '<!-- variables:end -->'

interface Row {
  readonly area: string
  readonly shownDefault: string
  readonly description: string
}

function cell(name: string, text: string): string {
  if (/[|\n]/.test(text)) throw new Error(`${name}: a table cell cannot hold "|" or a line break`)
  return text
}

/** The reference tables, one per area in the records' order, as Markdown. */
export function variablesMarkdown(): string {
  const areas = new Map<string, [string, Row][]>()
  for (const [name, row] of [...Object.entries(VARIABLES), ...Object.entries(NODE_VARIABLES)] as [
    string,
    Row,
  ][]) {
    const rows = areas.get(row.area) ?? []
    rows.push([name, row])
    areas.set(row.area, rows)
  }
  const sections = [...areas].map(([area, rows]) =>
    [
      `### ${area}`,
      '',
      '| variable | default | meaning |',
      '|---|---|---|',
      ...rows.map(
        ([name, row]) => `| \`${name}\` | ${cell(name, row.shownDefault)} | ${cell(name, row.description)} |`,
      ),
    ].join('\n'),
  )
  return sections.join('\n\n')
}

/** `document` (docs/configuration.md) with the text between its markers replaced by the generated tables. */
export function withVariablesMarkdown(document: string): string {
  const start = document.indexOf(TABLE_START)
  const end = document.indexOf(TABLE_END)
  if (start < 0 || end < start) throw new Error(`the document has no ${TABLE_START} ... ${TABLE_END} section`)
  return `${document.slice(0, start + TABLE_START.length)}\n\n${variablesMarkdown()}\n\n${document.slice(end)}`
}
