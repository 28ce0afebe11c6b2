import { once } from 'node:events'
import type { Writable } from 'node:stream'
import { type Instant, parseTimestamp, validDate } from '../../lib/instant.ts'
import type { FieldErrors } from '../../lib/validation.ts'
import type { LedgerExportFilter, LedgerExportRow } from './ledger-export.repository.ts'

// The ledger export (`npm run cli -- ledger:export`): options in, one line per ledger row out.
// docs/credits.md "Exporting and auditing the ledger" describes the columns.

export const LEDGER_EXPORT_FORMATS = ['csv', 'jsonl'] as const
export type LedgerExportFormat = (typeof LEDGER_EXPORT_FORMATS)[number]

/** The export's columns, in order (the CSV header, the JSONL keys). */
export const LEDGER_EXPORT_COLUMNS = [
  'id',
  'created_at',
  'user_id',
  'kind',
  'amount',
  'balance_after',
  'reason',
  'purchase_id',
  'checkout_session_id',
  'payment_intent_id',
  'hold_id',
  'order_id',
  'refund_id',
  'dispute_id',
  'package_id',
  'feature_id',
  'ai_call_id',
  'admin_id',
  'import_id',
] as const
type Column = (typeof LEDGER_EXPORT_COLUMNS)[number]
export type LedgerExportRecord = Record<Column, string | number | null>

// Which column the row's `reference` goes to, by kind.
const REFERENCE_COLUMN: Record<string, Column> = {
  purchase: 'checkout_session_id',
  hold_capture: 'order_id',
  refund: 'refund_id',
  dispute_withheld: 'dispute_id',
  dispute_returned: 'dispute_id',
  package: 'package_id',
  feature_use: 'feature_id',
  opening_balance: 'import_id',
}

/** One ledger row as the export writes it: ids as integers, amounts as exact decimal strings. */
export function toExportRecord(row: LedgerExportRow): LedgerExportRecord {
  const record: LedgerExportRecord = {
    id: row.id,
    created_at: row.createdAt,
    user_id: row.userId,
    kind: row.kind,
    amount: row.amount,
    balance_after: row.balanceAfter,
    reason: row.reason,
    purchase_id: row.purchaseId,
    // The purchase's, for its own row and its refunds and disputes.
    checkout_session_id: row.checkoutSessionId,
    payment_intent_id: row.paymentIntentId,
    hold_id: row.holdId,
    order_id: null,
    refund_id: null,
    dispute_id: null,
    package_id: null,
    feature_id: null,
    ai_call_id: row.aiCallId,
    admin_id: row.adminId,
    import_id: null,
  }
  const column = REFERENCE_COLUMN[row.kind]
  // A purchase row without purchase_id (credited before purchases were recorded) names its
  // checkout session only in its reference.
  if (column && row.reference !== null) record[column] ??= row.reference
  return record
}

// Spreadsheets run a cell that starts with one of these as a formula (OWASP "CSV injection").
const FORMULA_START = /^[=+\-@\t\r]/
// The columns PostgreSQL computes (numbers, the timestamp): never a formula, and "-5.0000" must stay a number.
const COMPUTED = new Set<Column>(['id', 'created_at', 'user_id', 'amount', 'balance_after'])

/** One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; text never starts a formula. */
function csvField(column: Column, value: string | number | null): string {
  if (value === null) return ''
  let text = String(value)
  if (typeof value === 'string' && !COMPUTED.has(column) && FORMULA_START.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export const csvHeader = (): string => `${LEDGER_EXPORT_COLUMNS.join(',')}\r\n`

export function csvLine(row: LedgerExportRow): string {
  const record = toExportRecord(row)
  return `${LEDGER_EXPORT_COLUMNS.map((column) => csvField(column, record[column])).join(',')}\r\n`
}

export const jsonLine = (row: LedgerExportRow): string => `${JSON.stringify(toExportRecord(row))}\n`

/** Writes `chunk`, and waits while `out` holds more than its buffer (so memory stays flat); rejects on its error. */
async function write(out: Writable, chunk: string): Promise<void> {
  if (out.errored) throw out.errored
  if (!out.write(chunk)) await once(out, 'drain')
}

/**
 * Writes the batches to `out` in `format` (CSV starts with its header line), one batch at a time:
 * the next batch is read only once `out` has taken this one. Answers the number of rows written.
 */
export async function writeLedgerExport(
  batches: AsyncIterable<LedgerExportRow[]>,
  format: LedgerExportFormat,
  out: Writable,
): Promise<number> {
  // An error (a closed pipe) is kept for the next write, instead of crashing the process.
  const ignore = () => {}
  out.on('error', ignore)
  try {
    let rows = 0
    if (format === 'csv') await write(out, csvHeader())
    const line = format === 'csv' ? csvLine : jsonLine
    for await (const batch of batches) {
      let chunk = ''
      for (const row of batch) chunk += line(row)
      await write(out, chunk)
      rows += batch.length
    }
    return rows
  } finally {
    out.off('error', ignore)
  }
}

export interface LedgerExportOptions {
  from?: string
  to?: string
  user?: string
  format?: string
}

/**
 * A bound of the period: a bare date is that day's 00:00 UTC, or, as `--to` (`endOfDay`), the next
 * day's, so `--to 2026-11-30` takes in all of the 30th; a timestamp is that instant.
 */
function parseInstant(value: string, endOfDay: boolean): Instant | null {
  if (validDate(value)) {
    const start = Date.parse(`${value}T00:00:00Z`) + (endOfDay ? 86_400_000 : 0)
    return { iso: new Date(start).toISOString(), micros: BigInt(start) * 1000n }
  }
  return parseTimestamp(value)
}

/** The filter and format of `ledger:export`'s options, or what is wrong with them (Laravel's words). */
export function parseLedgerExportOptions(
  options: LedgerExportOptions,
): { filter: LedgerExportFilter; format: LedgerExportFormat } | { errors: FieldErrors } {
  const errors: FieldErrors = {}
  const bound = (field: 'from' | 'to') => {
    const value = options[field]
    if (value === undefined || value.trim() === '') {
      errors[field] = [`The ${field} field is required.`]
      return null
    }
    const instant = parseInstant(value.trim(), field === 'to')
    if (!instant) {
      errors[field] = [`The ${field} field must be a date (YYYY-MM-DD) or an ISO 8601 timestamp.`]
    }
    return instant
  }
  const from = bound('from')
  const to = bound('to')
  if (from && to && to.micros <= from.micros) errors.to = ['The to field must be a date after from.']

  let userId: number | undefined
  if (options.user !== undefined) {
    userId = /^\d{1,15}$/.test(options.user) ? Number(options.user) : 0
    if (userId < 1) errors.user = ['The user field must be a positive integer.']
  }
  const format = (options.format ?? 'csv') as LedgerExportFormat
  if (!LEDGER_EXPORT_FORMATS.includes(format)) {
    errors.format = ['The selected format is invalid (csv or jsonl).']
  }
  if (Object.keys(errors).length > 0 || !from || !to) return { errors }
  return { filter: { from: from.iso, to: to.iso, userId }, format }
}
