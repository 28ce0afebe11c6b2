import { type Instant, parseTimestamp } from '../../lib/instant.ts'
import {
  type CreditsFile,
  creditsFileReference,
  type LineProblem,
  parseCredits,
  parseUserKey,
  readCsvTable,
  type UserKey,
} from './credit-file.ts'

/** One line of the holds file: a hold still open in the original. */
export interface HoldLine {
  line: number
  user: UserKey
  orderId: string
  accountHash: string | null
  /** Credits in 1/10000 units, more than zero. */
  units: bigint
  /** When the original created it (kept beside the hold; the hold itself counts from the import). */
  createdAt: Instant
}

export interface HoldsFile {
  name: string
  reference: string
  lines: HoldLine[]
  /** Lines that cannot be imported whoever they name (a bad number or time, no order, no user). */
  problems: LineProblem[]
}

// The broker's parent order id, as POST /api/credit-holds takes it.
const ORDER_ID_MAX = 191

/**
 * The holds file: a header naming `user`, `broker_parent_order_id`, `credits` and `created_at` (and
 * optionally `broker_account_hash`), then one line per open hold; `created_at` in ISO 8601 or as
 * MySQL prints it (`2026-11-30 09:15:00`), UTC unless it names an offset. Throws CreditsFileError
 * when the file as a whole cannot be read.
 */
export function readHoldsFile(file: CreditsFile): HoldsFile {
  const { records, problems } = readCsvTable(
    file,
    ['user', 'broker_parent_order_id', 'credits', 'created_at'],
    ['broker_account_hash'],
  )
  const lines: HoldLine[] = []
  for (const { line, values } of records) {
    const problem = (reason: string) => problems.push({ file: file.name, line, reason })
    const user = parseUserKey(values.user ?? '')
    if ('problem' in user) {
      problem(user.problem)
      continue
    }
    const orderId = values.broker_parent_order_id ?? ''
    if (orderId === '' || orderId.length > ORDER_ID_MAX) {
      problem(`the broker_parent_order_id field must be 1 to ${ORDER_ID_MAX} characters`)
      continue
    }
    const credits = parseCredits(values.credits ?? '')
    if ('problem' in credits) {
      problem(credits.problem)
      continue
    }
    if (credits.units === 0n) {
      problem('a hold of 0 credits holds nothing')
      continue
    }
    const createdAt = parseTimestamp(values.created_at ?? '')
    if (!createdAt) {
      problem(
        `${JSON.stringify(values.created_at ?? '')} is not a time (ISO 8601, or YYYY-MM-DD HH:MM:SS in UTC)`,
      )
      continue
    }
    const accountHash = values.broker_account_hash || null
    if (accountHash !== null && accountHash.length > ORDER_ID_MAX) {
      problem(`the broker_account_hash field must be at most ${ORDER_ID_MAX} characters`)
      continue
    }
    lines.push({ line, user, orderId, accountHash, units: credits.units, createdAt })
  }
  return { name: file.name, reference: creditsFileReference(file), lines, problems }
}
