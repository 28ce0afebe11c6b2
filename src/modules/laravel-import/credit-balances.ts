import {
  type CreditsFile,
  creditsFileReference,
  type LineProblem,
  parseCredits,
  parseUserKey,
  readCsvTable,
  type UserKey,
} from './credit-file.ts'

/** One line of the balances file: the user's whole balance in the original, held credits included. */
export interface BalanceLine {
  line: number
  user: UserKey
  /** Credits in 1/10000 units, zero or more. */
  units: bigint
}

export interface BalancesFile {
  name: string
  reference: string
  lines: BalanceLine[]
  /** Lines that cannot be imported whoever they name (a bad number, no user). */
  problems: LineProblem[]
}

/**
 * The balances file: a header naming `user` and `credits`, then one line per user (`user`: an email,
 * or the user's id in the Laravel original; `credits`: zero or more). Throws CreditsFileError when
 * the file as a whole cannot be read.
 */
export function readBalancesFile(file: CreditsFile): BalancesFile {
  const { records, problems } = readCsvTable(file, ['user', 'credits'])
  const lines: BalanceLine[] = []
  for (const { line, values } of records) {
    const user = parseUserKey(values.user ?? '')
    const credits = parseCredits(values.credits ?? '')
    if ('problem' in user) problems.push({ file: file.name, line, reason: user.problem })
    else if ('problem' in credits) problems.push({ file: file.name, line, reason: credits.problem })
    else lines.push({ line, user, units: credits.units })
  }
  return { name: file.name, reference: creditsFileReference(file), lines, problems }
}
