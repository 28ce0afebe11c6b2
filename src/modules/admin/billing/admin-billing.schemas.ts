import { type Static, Type } from 'typebox'
import { BillingPackage } from '../../credits/billing.catalog.ts'
import { HoldResponse } from '../../credits/holds/holds.schemas.ts'
import { TransactionResponse } from '../../credits/ledger.schemas.ts'
import { AdminAuditRecordResponse, AuditReason } from '../audit/admin-audit.schemas.ts'

// numeric(20, 4) holds 16 integer digits; an adjustment of a trillion credits is a typo, not a grant.
export const MAX_ADJUSTMENT = 1_000_000_000_000

export const AdminBillingParams = Type.Object({
  user: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The user id.' }),
})

export const AdjustBody = Type.Object({
  amount: Type.Number({
    minimum: -MAX_ADJUSTMENT,
    maximum: MAX_ADJUSTMENT,
    description: 'Signed credits, at most 4 decimals: positive grants, negative debits. Not zero.',
    examples: [25, -10.5],
  }),
  reason: AuditReason,
})
export type AdjustBody = Static<typeof AdjustBody>

export const PackageBody = Type.Object({
  package_id: Type.String({ minLength: 1, maxLength: 64, examples: ['pro'] }),
  reason: AuditReason,
})
export type PackageBody = Static<typeof PackageBody>

export const UsedFeature = Type.Object({
  feature_id: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()], {
    description: "The catalog's name; null for a feature it no longer lists.",
  }),
  uses: Type.Integer(),
  credits: Type.Number({ description: 'Credits spent on the feature in all.' }),
  last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
})
export type UsedFeature = Static<typeof UsedFeature>

/** `GET /api/admin/users/{user}/billing`, and the answer of both admin changes. */
export const AdminBillingResponse = Type.Object({
  user: Type.Object({ id: Type.Integer(), name: Type.String(), email: Type.String() }),
  available_credits: Type.Number(),
  held_credits: Type.Number(),
  credits_available_for_automation: Type.Number(),
  current_package: Type.Union([BillingPackage, Type.Null()]),
  holds: Type.Array(HoldResponse, { description: 'The newest holds, any status.' }),
  transactions: Type.Array(TransactionResponse, { description: 'The newest ledger rows.' }),
  used_features: Type.Array(UsedFeature, { description: "The user's feature_use ledger rows, by feature." }),
  audit: Type.Array(AdminAuditRecordResponse, {
    description: 'The newest admin audit records about the user (money and account changes), newest first.',
  }),
})
export type AdminBillingResponse = Static<typeof AdminBillingResponse>
