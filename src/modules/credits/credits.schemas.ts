import { type Static, Type } from 'typebox'
import { BillingPackage } from './billing.catalog.ts'

/** `GET /api/credits`: the user's credit summary and the packages on sale. */
export const CreditsResponse = Type.Object({
  available_credits: Type.Number({ description: 'The ledger balance; unchanged by holds.' }),
  held_credits: Type.Number({ description: 'The sum of the held holds.' }),
  credits_available_for_automation: Type.Number({ description: 'available_credits - held_credits' }),
  packages: Type.Array(BillingPackage),
})
export type CreditsResponse = Static<typeof CreditsResponse>

export const MAX_PER_PAGE = 50
export const DEFAULT_PER_PAGE = 25

/** `?page&per_page` of the credits lists (holds, ledger): per_page 1..50, default 25, as the spec sets for holds. */
export const PageQuery = Type.Object({
  per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PER_PAGE, description: 'Default 25.' })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'Default 1.' })),
})
export type PageQuery = Static<typeof PageQuery>
