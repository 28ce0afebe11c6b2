import type { UserRow } from '../../../db/schema/index.ts'
import { creditNumber } from '../../../lib/decimal.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import type { BillingCatalog } from '../../credits/billing.catalog.ts'
import type { FeatureUse } from '../../credits/billing.repository.ts'
import type { HoldResponse } from '../../credits/holds/holds.schemas.ts'
import type { TransactionResponse } from '../../credits/ledger.schemas.ts'
import type { CreditSummary } from '../../users/users.presenters.ts'
import type { AdminAuditRecordResponse } from '../audit/admin-audit.schemas.ts'
import type { AdminBillingResponse, UsedFeature } from './admin-billing.schemas.ts'

export interface AdminBillingView {
  user: UserRow
  summary: CreditSummary
  currentPackageId: string | null
  holds: HoldResponse[]
  transactions: TransactionResponse[]
  featureUses: FeatureUse[]
  audit: AdminAuditRecordResponse[]
}

function presentFeatureUse(use: FeatureUse, catalog: BillingCatalog): UsedFeature {
  return {
    feature_id: use.featureId,
    name: (use.featureId && catalog.findFeature(use.featureId)?.name) || null,
    uses: use.uses,
    credits: creditNumber(use.credits),
    last_used_at: laravelDate(use.lastUsedAt),
  }
}

/** A user's billing as the admin screen shows it; the user is reduced to who they are. */
export function presentAdminBilling(view: AdminBillingView, catalog: BillingCatalog): AdminBillingResponse {
  return {
    user: { id: view.user.id, name: view.user.name, email: view.user.email },
    ...view.summary,
    current_package: (view.currentPackageId && catalog.findPackage(view.currentPackageId)) || null,
    holds: view.holds,
    transactions: view.transactions,
    used_features: view.featureUses.map((use) => presentFeatureUse(use, catalog)),
    audit: view.audit,
  }
}
