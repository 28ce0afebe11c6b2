import { creditUnitsToString, toCreditUnits } from '../../../lib/decimal.ts'

/**
 * The credits that `part` of a payment of `whole` (both in the currency's minor unit) stands for,
 * out of `credits` bought with it: exact to 1/10000 credit, half rounded up, never more than all.
 */
export function proportionalCredits(credits: string, part: number, whole: number): string {
  const bought = toCreditUnits(credits)
  if (part >= whole) return creditUnitsToString(bought)
  if (part <= 0) return '0'
  const share = (bought * BigInt(part) * 2n + BigInt(whole)) / (2n * BigInt(whole))
  return creditUnitsToString(share)
}
