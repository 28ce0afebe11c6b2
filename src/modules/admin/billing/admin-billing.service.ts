import type { Db } from '../../../db/client.ts'
import type { CreditAccountRow, UserRow } from '../../../db/schema/index.ts'
import { creditNumber, toCreditString } from '../../../lib/decimal.ts'
import { notFound, ValidationError } from '../../../lib/errors.ts'
import { type BillingCatalog, packageCredits } from '../../credits/billing.catalog.ts'
import { createBillingRepository } from '../../credits/billing.repository.ts'
import type { createHoldsService } from '../../credits/holds/holds.service.ts'
import type { LedgerService } from '../../credits/ledger.service.ts'
import type { UsersService } from '../../users/users.service.ts'
import type { AdminAuditService, AuditActor } from '../audit/admin-audit.service.ts'
import { type AdminBillingView, presentAdminBilling } from './admin-billing.presenters.ts'
import type { AdjustBody, AdminBillingResponse, PackageBody } from './admin-billing.schemas.ts'

// How much of each list the admin screen shows: the newest rows.
const RECENT_HOLDS = 25
const RECENT_TRANSACTIONS = 25

export interface AdminBillingDeps {
  db: Db
  catalog: BillingCatalog
  ledger: LedgerService
  holds: ReturnType<typeof createHoldsService>
  users: UsersService
  audit: AdminAuditService
  /** APP_URL, for the (unused) page links of the lists read through the paginated services. */
  appUrl: string
}

// Laravel's route model binding answer for a user id that names nobody.
const userNotFound = (id: number) => notFound(`No query results for model [App\\Models\\User] ${id}`)

/** The figures an audit record keeps of the user's credit account, before or after a change. */
const accountFigures = (account: Pick<CreditAccountRow, 'balance' | 'held' | 'currentPackageId'>) => ({
  available_credits: creditNumber(account.balance),
  held_credits: creditNumber(account.held),
  current_package_id: account.currentPackageId,
})

/**
 * An admin's view and changes of one user's billing; every change records the admin on the ledger
 * row and leaves an audit record (who, from where, why, the account before and after) in its
 * transaction.
 */
export function createAdminBillingService(deps: AdminBillingDeps) {
  const { db, catalog, ledger, holds, users, audit } = deps
  const repo = createBillingRepository({ db })

  const userOr404 = async (id: number): Promise<UserRow> => {
    const user = await users.findById(id)
    if (!user) throw userNotFound(id)
    return user
  }

  const overviewOf = async (user: UserRow): Promise<AdminBillingResponse> => {
    const [summary, currentPackageId, holdPage, history, featureUses, auditRecords] = await Promise.all([
      ledger.summary(user.id),
      repo.currentPackageId(user.id),
      holds.list(user.id, { per_page: RECENT_HOLDS }, `${deps.appUrl}/api/credit-holds`),
      ledger.history(user.id, 1, RECENT_TRANSACTIONS, `${deps.appUrl}/api/transaction-history`),
      repo.featureUses(user.id),
      audit.recent(user.id),
    ])
    const view: AdminBillingView = {
      user,
      summary,
      currentPackageId,
      holds: holdPage.data,
      transactions: history.data,
      featureUses,
      audit: auditRecords,
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
     * reason, and a `billing.adjust` audit record; a debit the user's spendable credits do not cover
     * is a 422 on `amount`, and neither is written.
     */
    async adjust(actor: AuditActor, userId: number, input: AdjustBody): Promise<AdminBillingResponse> {
      const user = await userOr404(userId)
      const amount = toCreditString(input.amount)
      if (amount === null) {
        throw ValidationError.withMessages({ amount: ['The amount field must have 0-4 decimal places.'] })
      }
      if (Number(amount) === 0) {
        throw ValidationError.withMessages({ amount: ['The amount field must not be zero.'] })
      }
      await ledger.withLockedAccount(user.id, async (tx, account) => {
        const row = await ledger.append(tx, {
          userId: user.id,
          amount,
          kind: 'admin_adjustment',
          reason: input.reason,
          adminId: actor.id,
        })
        await audit.record(tx, actor, {
          action: 'billing.adjust',
          subjectUserId: user.id,
          reason: input.reason,
          before: accountFigures(account),
          after: { ...accountFigures({ ...account, balance: row.balanceAfter }), amount: Number(amount) },
        })
      })
      return overviewOf(user)
    },

    /**
     * Grants a catalog package: its credits as a `package` row carrying the admin's id, it becomes
     * the user's current package, and a `billing.package` audit record keeps why, in one transaction.
     * An unknown package is a 422 on `package_id`.
     */
    async grantPackage(actor: AuditActor, userId: number, input: PackageBody): Promise<AdminBillingResponse> {
      const user = await userOr404(userId)
      const pkg = catalog.findPackage(input.package_id)
      if (!pkg) throw ValidationError.withMessages({ package_id: ['The selected package id is invalid.'] })
      await ledger.withLockedAccount(user.id, async (tx, account) => {
        const credits = packageCredits(pkg)
        const row = await ledger.append(tx, {
          userId: user.id,
          amount: credits,
          kind: 'package',
          reference: pkg.id,
          reason: `Package "${pkg.name}" granted by an admin`,
          adminId: actor.id,
        })
        await ledger.setCurrentPackage(tx, user.id, pkg.id)
        await audit.record(tx, actor, {
          action: 'billing.package',
          subjectUserId: user.id,
          reason: input.reason,
          before: accountFigures(account),
          after: {
            ...accountFigures({ ...account, balance: row.balanceAfter, currentPackageId: pkg.id }),
            package_id: pkg.id,
            credits: creditNumber(credits),
          },
        })
      })
      return overviewOf(user)
    },
  }
}
