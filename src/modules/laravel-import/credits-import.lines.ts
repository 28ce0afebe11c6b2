import type { BalanceLine } from './credit-balances.ts'
import { describeUser, type LineProblem, type UserKey } from './credit-file.ts'
import type { HoldLine } from './credit-holds.ts'
import type { UserLines } from './credits-import.plan.ts'

// The files' lines gathered per user, once their users are known: a line naming no user, and
// lines that repeat one another, are set aside as problems here.

/** The key resolveUsers answers by. */
export const userKeyOf = (user: UserKey): string =>
  'email' in user ? `email:${user.email}` : `id:${user.oldId}`

/**
 * A user (balances) or a user's order (holds) on several lines is imported once when the lines
 * agree on the credits; when they disagree, none of them is.
 */
function oneOf<L extends { line: number; units: bigint }>(
  lines: L[],
  what: string,
  problem: (line: number, reason: string) => void,
): L | undefined {
  const [first, ...others] = lines
  if (!first) return undefined
  if (others.every((line) => line.units === first.units)) {
    for (const other of others) problem(other.line, `repeats line ${first.line} (${what}): imported once`)
    return first
  }
  const all = lines.map((line) => line.line).join(', ')
  for (const line of lines)
    problem(line.line, `${what} is on lines ${all} with different credits: none imported`)
  return undefined
}

const unknownUser = (user: UserKey) =>
  'email' in user
    ? `unknown user: no user has the email ${user.email}`
    : `unknown user: no user was imported with the Laravel user id ${user.oldId} (import the users first)`

/**
 * Each user's lines (by user id, in id order), and the problems of the lines that name no known
 * user or repeat another.
 */
export function linesPerUser(
  files: { balances: { name: string; lines: BalanceLine[] }; holds: { name: string; lines: HoldLine[] } },
  userIds: Map<string, number>,
): { users: [number, UserLines][]; problems: { balances: LineProblem[]; holds: LineProblem[] } } {
  const problems = { balances: [] as LineProblem[], holds: [] as LineProblem[] }
  const found = new Map<number, { balances: BalanceLine[]; holds: HoldLine[] }>()
  const of = (userId: number) => {
    const lines = found.get(userId) ?? { balances: [], holds: [] }
    found.set(userId, lines)
    return lines
  }
  const sortOut = <L extends BalanceLine | HoldLine>(
    which: keyof typeof problems,
    lines: L[],
    into: (userId: number) => L[],
  ) => {
    for (const line of lines) {
      const userId = userIds.get(userKeyOf(line.user))
      const reason = unknownUser(line.user)
      if (userId === undefined) problems[which].push({ file: files[which].name, line: line.line, reason })
      else into(userId).push(line)
    }
  }
  sortOut('balances', files.balances.lines, (userId) => of(userId).balances)
  sortOut('holds', files.holds.lines, (userId) => of(userId).holds)

  const users: [number, UserLines][] = []
  for (const userId of [...found.keys()].sort((a, b) => a - b)) {
    const { balances, holds } = found.get(userId) ?? { balances: [], holds: [] }
    const problemIn = (which: keyof typeof problems) => (line: number, reason: string) =>
      problems[which].push({ file: files[which].name, line, reason })
    const [named] = balances
    const balance = named && oneOf(balances, `user ${describeUser(named.user)}`, problemIn('balances'))
    const ofOrders = [...Map.groupBy(holds, (hold) => hold.orderId).values()]
      .map((same) => oneOf(same, `the hold of order ${same[0]?.orderId}`, problemIn('holds')))
      .filter((hold) => hold !== undefined)
      .sort((a, b) => a.line - b.line)
    users.push([userId, { balance, holds: ofOrders }])
  }
  return { users, problems }
}
