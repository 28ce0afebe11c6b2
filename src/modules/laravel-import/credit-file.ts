import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { parseCsv } from '../../lib/csv.ts'
import { toCreditUnits } from '../../lib/decimal.ts'

// What the balances and holds files have in common: how they are read, named and referenced, and
// how a user and an amount are written in them (docs/credits.md, "Credits from the Laravel original").

/** A CSV file the operator exported from the Laravel original, as read. */
export interface CreditsFile {
  /** How the report names it (its path, as the operator gave it). */
  name: string
  content: Uint8Array
}

/** A file that cannot be read as a whole (not UTF-8, a missing column): nothing of it is imported. */
export class CreditsFileError extends Error {}

/** A line that cannot be imported, and why. */
export interface LineProblem {
  file: string
  line: number
  reason: string
}

/** A user as a file names them: by email (any case), or by their id in the Laravel original. */
export type UserKey = { email: string } | { oldId: number }

/** The file at `path`, read whole (an export of one table: megabytes at most). */
export async function readCreditsFile(path: string): Promise<CreditsFile> {
  return { name: path, content: await readFile(path) }
}

/**
 * What the import's rows name as their source (the reference of each opening balance, the record of
 * each hold): the same bytes always give the same reference, so importing a file again is known.
 */
export function creditsFileReference(file: CreditsFile): string {
  return `laravel-import:${createHash('sha256').update(file.content).digest('hex').slice(0, 12)}`
}

/** One data record, its fields by column name. */
export interface NamedRecord {
  line: number
  values: Record<string, string>
}

/**
 * The file's records, each field trimmed and named by the header row's columns (in any order and
 * case). The header must name every `required` column and nothing outside `required` and
 * `optional`; a record with another count of fields than the header is a problem of its line.
 */
export function readCsvTable(
  file: CreditsFile,
  required: readonly string[],
  optional: readonly string[] = [],
): { records: NamedRecord[]; problems: LineProblem[] } {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(file.content)
  } catch {
    throw new CreditsFileError(`${file.name}: not UTF-8 text; export it as UTF-8 CSV.`)
  }
  const [header, ...rows] = parseCsv(text)
  if (!header)
    throw new CreditsFileError(`${file.name}: the file is empty; the first line names the columns.`)
  const columns = header.fields.map((field) => field.trim().toLowerCase())
  const missing = required.filter((column) => !columns.includes(column))
  const unknown = columns.filter((column) => !required.includes(column) && !optional.includes(column))
  const repeated = columns.filter((column, i) => columns.indexOf(column) !== i)
  if (missing.length > 0 || unknown.length > 0 || repeated.length > 0 || header.unclosedQuote) {
    const expected = [...required, ...optional.map((column) => `[${column}]`)].join(', ')
    throw new CreditsFileError(
      `${file.name}: the first line must name the columns ${expected}; it names ${columns.join(', ') || 'none'}.`,
    )
  }
  const records: NamedRecord[] = []
  const problems: LineProblem[] = []
  for (const row of rows) {
    if (row.unclosedQuote) {
      problems.push({
        file: file.name,
        line: row.line,
        reason: 'a quoted field is never closed: the rest of the file was read as part of it',
      })
    } else if (row.fields.length !== columns.length) {
      problems.push({
        file: file.name,
        line: row.line,
        reason: `${row.fields.length} fields where the first line names ${columns.length} columns`,
      })
    } else {
      const values = Object.fromEntries(columns.map((column, i) => [column, (row.fields[i] ?? '').trim()]))
      records.push({ line: row.line, values })
    }
  }
  return { records, problems }
}

const EMAIL = /^[^\s@]+@[^\s@]+$/
const OLD_ID = /^\d{1,15}$/

/** The user a `user` field names, or why it names none. */
export function parseUserKey(value: string): UserKey | { problem: string } {
  if (value === '') return { problem: 'the user field is empty' }
  if (OLD_ID.test(value)) {
    const oldId = Number(value)
    return oldId > 0
      ? { oldId }
      : { problem: `${JSON.stringify(value)} is not a user id of the Laravel original` }
  }
  if (EMAIL.test(value) && value.length <= 255) return { email: value.toLowerCase() }
  return { problem: `${JSON.stringify(value)} is neither an email nor a user id of the Laravel original` }
}

/** How the report names a user key. */
export const describeUser = (user: UserKey): string =>
  'email' in user ? user.email : `Laravel user id ${user.oldId}`

const CREDITS = /^\d{1,16}(\.\d{1,4})?$/

/**
 * A number of credits as 1/10000 units: a whole number, or a decimal with at most 4 places (as a
 * MySQL DECIMAL column prints it, `12.00`); or why it is not one.
 */
export function parseCredits(value: string): { units: bigint } | { problem: string } {
  if (value === '') return { problem: 'the credits field is empty' }
  if (CREDITS.test(value)) return { units: toCreditUnits(value) }
  if (/^-\d/.test(value)) return { problem: `credits must not be negative (${value})` }
  return {
    problem: `${JSON.stringify(value)} is not a number of credits (a whole number, or at most 4 decimals)`,
  }
}
