import type { Db } from '../../../db/client.ts'
import type { UserRow } from '../../../db/schema/index.ts'
import { toCreditString } from '../../../lib/decimal.ts'
import { notFound, ValidationError } from '../../../lib/errors.ts'
import { type BillingCatalog, packageCredits } from '../../credits/billing.catalog.ts'
import { createBillingRepository } from '../../credits/billing.repository.ts'
import type { createHoldsService } from '../../credits/holds/holds.service.ts'
import type { LedgerService } from '../../credits/ledger.service.ts'
import type { UsersService } from '../../users/users.service.ts'
import { type AdminBillingView, presentAdminBilling } from './admin-billing.presenters.ts'
import type { AdjustBody, AdminBillingResponse } from './admin-billing.schemas.ts'

// How much of each list the admin screen shows: the newest rows.
const RECENT_HOLDS = 25
const RECENT_TRANSACTIONS = 25

export interface AdminBillingDeps {
  db: Db
  catalog: BillingCatalog
  ledger: LedgerService
  holds: ReturnType<typeof createHoldsService>
  users: UsersService
  /** APP_URL, for the (unused) page links of the lists read through the paginated services. */
  appUrl: string
}

// Laravel's route model binding answer for a user id that names nobody.
const userNotFound = (id: number) => notFound(`No query results for model [App\\Models\\User] ${id}`)

/** An admin's view and changes of one user's billing; every change records the admin on the ledger row. */
export function createAdminBillingService(deps: AdminBillingDeps) {
  const { db, catalog, ledger, holds, users } = deps
  const repo = createBillingRepository({ db })

  const userOr404 = async (id: number): Promise<UserRow> => {
    const user = await users.findById(id)
    if (!user) throw userNotFound(id)
    return user
  }

  const overviewOf = async (user: UserRow): Promise<AdminBillingResponse> => {
    const [summary, currentPackageId, holdPage, history, featureUses] = await Promise.all([
      ledger.summary(user.id),
      repo.currentPackageId(user.id),
      holds.list(user.id, { per_page: RECENT_HOLDS }, `${deps.appUrl}/api/credit-holds`),
      ledger.history(user.id, 1, RECENT_TRANSACTIONS, `${deps.appUrl}/api/transaction-history`),
      repo.featureUses(user.id),
    ])
    const view: AdminBillingView = {
      user,
      summary,
      currentPackageId,
      holds: holdPage.data,
      transactions: history.data,
      featureUses,
    }
    return presentAdminBilling(view, catalog)
  }

  return {
    /** The user's credits, holds, newest ledger rows, current package and used features; 404 for nobody. */
    async overview(userId: number): Promise<AdminBillingResponse> {
      return overviewOf(await userOr404(userId))
    },

    /**
     * Adds (or, negative, takes) credits as an `admin_adjustment` row carrying the admin's id and the
     * reason; a debit the user's spendable credits do not cover is a 422 on `amount`.
     */
    async adjust(adminId: number, userId: number, input: AdjustBody): Promise<AdminBillingResponse> {
      const user = await userOr404(userId)
      const amount = toCreditString(input.amount)
      if (amount === null) {
        throw ValidationError.withMessages({ amount: ['The amount field must have 0-4 decimal places.'] })
      }
      if (Number(amount) === 0) {
        throw ValidationError.withMessages({ amount: ['The amount field must not be zero.'] })
      }
      await ledger.withLockedAccount(user.id, (tx) =>
        ledger.append(tx, {
          userId: user.id,
          amount,
          kind: 'admin_adjustment',
          reason: input.reason,
          adminId,
        }),
      )
      return overviewOf(user)
    },

    /**
     * Grants a catalog package: its credits as a `package` row carrying the admin's id, and it becomes
     * the user's current package, in one transaction. An unknown package is a 422 on `package_id`.
     */
    async grantPackage(adminId: number, userId: number, packageId: string): Promise<AdminBillingResponse> {
      const user = await userOr404(userId)
      const pkg = catalog.findPackage(packageId)
      if (!pkg) throw ValidationError.withMessages({ package_id: ['The selected package id is invalid.'] })
      await ledger.withLockedAccount(user.id, async (tx) => {
        await ledger.append(tx, {
          userId: user.id,
          amount: packageCredits(pkg),
          kind: 'package',
          reference: pkg.id,
          reason: `Package "${pkg.name}" granted by an admin`,
          adminId,
        })
        await ledger.setCurrentPackage(tx, user.id, pkg.id)
      })
      return overviewOf(user)
    },
  }
}
