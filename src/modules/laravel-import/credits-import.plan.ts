import { creditUnitsToString } from '../../lib/decimal.ts'
import type { BalanceLine } from './credit-balances.ts'
import type { HoldLine } from './credit-holds.ts'

// What importing one user's lines does, decided from what the database holds for them: the same
// rules for a dry run (read without a lock) and for the import (read again under the account lock).

/** What the database holds for one user, as far as the import is concerned. */
export interface UserCredits {
  /** Their opening balance, if an import wrote one: its reference and amount. */
  opening: { reference: string | null; amount: string } | undefined
  /** balance and held of their credit account, in 1/10000 units (0 without one). */
  balance: bigint
  held: bigint
  /** The holds already on the orders the file names, by order: the import reference of an imported one. */
  holds: Map<string, { id: number; importedFrom: string | undefined }>
}

/** One user's lines of the two files, once repeated lines are set aside. */
export interface UserLines {
  balance: BalanceLine | undefined
  holds: HoldLine[]
}

export type LineOutcome = 'imported' | 'already-imported' | 'zero' | { problem: string }

export interface UserPlan {
  /** The opening balance to write (1/10000 units), if any. */
  credit: bigint | null
  holds: HoldLine[]
  /** What became of each line, with its credits (1/10000 units). */
  balance: { line: number; units: bigint; outcome: LineOutcome } | undefined
  holdOutcomes: { line: number; units: bigint; outcome: LineOutcome }[]
}

const credits = (units: bigint) => creditUnitsToString(units)

/**
 * The balance line becomes the user's opening balance unless they have one (from this file: already
 * imported; from another: not credited twice); zero writes nothing. Then each hold, in file order,
 * unless its order has a hold here, when the spendable credits (balance - held, the opening balance
 * included) cover it.
 */
export function planUser(state: UserCredits, lines: UserLines, files: { balances: string; holds: string }) {
  const plan: UserPlan = { credit: null, holds: [], balance: undefined, holdOutcomes: [] }
  let balance = state.balance
  let held = state.held
  if (lines.balance) {
    const { line, units } = lines.balance
    let outcome: LineOutcome
    if (state.opening?.reference === files.balances) outcome = 'already-imported'
    else if (units === 0n) outcome = 'zero'
    else if (state.opening) {
      outcome = {
        problem: `the user has an opening balance already (${state.opening.reference}, ${Number(state.opening.amount)} credits): not credited twice; an admin adjustment corrects it`,
      }
    } else {
      outcome = 'imported'
      plan.credit = units
      balance += units
    }
    plan.balance = { line, units, outcome }
  }
  for (const hold of lines.holds) {
    const existing = state.holds.get(hold.orderId)
    let outcome: LineOutcome
    if (existing?.importedFrom === files.holds) outcome = 'already-imported'
    else if (existing) {
      const from = existing.importedFrom ? `imported from ${existing.importedFrom}` : 'placed here'
      outcome = { problem: `the order has a hold already (hold ${existing.id}, ${from})` }
    } else if (balance - held < hold.units) {
      outcome = {
        problem: `the spendable credits (${credits(balance - held)}: balance ${credits(balance)} less ${credits(held)} held) do not cover the hold's ${credits(hold.units)}`,
      }
    } else {
      outcome = 'imported'
      plan.holds.push(hold)
      held += hold.units
    }
    plan.holdOutcomes.push({ line: hold.line, units: hold.units, outcome })
  }
  return plan
}

/** Whether the plan writes anything. */
export const writes = (plan: UserPlan): boolean => plan.credit !== null || plan.holds.length > 0
