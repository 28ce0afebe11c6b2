import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type Static, Type } from 'typebox'
import { toCreditString } from '../../lib/decimal.ts'
import { compileValidator } from '../../lib/validation.ts'

/** config/billing.json: the credit packages on sale and the features that cost credits. */
export const DEFAULT_CATALOG_FILE = fileURLToPath(new URL('../../../config/billing.json', import.meta.url))

// Ids travel in URLs (/buy-credits/{package}) and fit credit_accounts.current_package_id.
export const CATALOG_ID_PATTERN = '^[a-z0-9][a-z0-9_-]{0,63}$'
const Id = Type.String({ pattern: CATALOG_ID_PATTERN })
// Credits as JSON numbers with at most four decimals (numeric(20, 4)); checked exactly below.
const Credits = Type.Number({ exclusiveMinimum: 0, maximum: 1e12 })

export const BillingPackage = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1, maxLength: 100 }),
  credits: Credits,
  price: Type.Number({ exclusiveMinimum: 0, maximum: 1e6, description: 'In major units (9.99 = $9.99).' }),
  // Two-decimal currencies only: the Stripe amount is price x 100.
  currency: Type.Union([
    Type.Literal('usd'),
    Type.Literal('eur'),
    Type.Literal('gbp'),
    Type.Literal('chf'),
    Type.Literal('cad'),
    Type.Literal('aud'),
  ]),
})
export type BillingPackage = Static<typeof BillingPackage>

export const BillingFeature = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1, maxLength: 100 }),
  credit_cost: Credits,
})
export type BillingFeature = Static<typeof BillingFeature>

const CatalogFile = Type.Object({
  packages: Type.Array(BillingPackage, { minItems: 1, maxItems: 100 }),
  features: Type.Array(BillingFeature, { maxItems: 100 }),
})

export interface BillingCatalog {
  readonly packages: readonly BillingPackage[]
  readonly features: readonly BillingFeature[]
  findPackage(id: string): BillingPackage | undefined
  findFeature(id: string): BillingFeature | undefined
}

/** A package's credits as the exact decimal string the ledger takes. */
export const packageCredits = (pkg: BillingPackage): string => toCreditString(pkg.credits) as string

/** A package's price in the currency's minor unit (cents), as Stripe takes it. */
export const unitAmount = (pkg: BillingPackage): number => Math.round(pkg.price * 100)

const checkCatalog = compileValidator(CatalogFile)

function problemsOf(data: unknown): string[] {
  const problems = Object.entries(checkCatalog(data)).map(([key, messages]) => `${key}: ${messages[0]}`)
  if (problems.length > 0) return problems
  const catalog = data as Static<typeof CatalogFile>
  for (const [list, items] of [
    ['packages', catalog.packages],
    ['features', catalog.features],
  ] as const) {
    const seen = new Set<string>()
    items.forEach((item, index) => {
      if (seen.has(item.id)) problems.push(`${list}.${index}.id: "${item.id}" is listed twice`)
      seen.add(item.id)
      const credits = 'credits' in item ? item.credits : item.credit_cost
      if (toCreditString(credits) === null) {
        problems.push(`${list}.${index}: ${credits} credits has more than 4 decimals`)
      }
    })
  }
  catalog.packages.forEach((pkg, index) => {
    // A price in whole cents; a float like 9.99 is 998.9999... before rounding, hence the tolerance.
    if (Math.abs(pkg.price * 100 - unitAmount(pkg)) > 1e-6) {
      problems.push(`packages.${index}.price: ${pkg.price} is not a whole number of cents`)
    }
  })
  return problems
}

/**
 * Reads and checks the billing catalog once (at start); a missing, malformed or invalid file throws
 * an error naming the file and every problem, so the service refuses to start rather than sell wrong.
 */
export function loadBillingCatalog(file: string = DEFAULT_CATALOG_FILE): BillingCatalog {
  let data: unknown
  try {
    data = JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    throw new Error(`Invalid billing catalog ${file}: ${(error as Error).message}`)
  }
  const problems = problemsOf(data)
  if (problems.length > 0) {
    throw new Error(`Invalid billing catalog ${file}:\n  - ${problems.join('\n  - ')}`)
  }
  const { packages, features } = data as Static<typeof CatalogFile>
  const frozen = <T extends object>(items: T[]) => Object.freeze(items.map((item) => Object.freeze(item)))
  const byPackage = new Map(packages.map((pkg) => [pkg.id, pkg]))
  const byFeature = new Map(features.map((feature) => [feature.id, feature]))
  return Object.freeze({
    packages: frozen(packages),
    features: frozen(features),
    findPackage: (id: string) => byPackage.get(id),
    findFeature: (id: string) => byFeature.get(id),
  })
}
