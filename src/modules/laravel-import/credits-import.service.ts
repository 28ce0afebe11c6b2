import type { Db } from '../../db/client.ts'
import type { CreditAccountRow } from '../../db/schema/index.ts'
import type { Clock } from '../../lib/clock.ts'
import { creditUnitsToString, toCreditUnits } from '../../lib/decimal.ts'
import { mapBounded } from '../../lib/map-bounded.ts'
import type { HoldsService } from '../credits/holds/holds.service.ts'
import type { LedgerService } from '../credits/ledger.service.ts'
import type { UsersService } from '../users/users.service.ts'
import { type BalancesFile, readBalancesFile } from './credit-balances.ts'
import { type CreditsFile, CreditsFileError, type LineProblem, type UserKey } from './credit-file.ts'
import { type HoldsFile, readHoldsFile } from './credit-holds.ts'
import { linesPerUser, userKeyOf } from './credits-import.lines.ts'
import {
  type LineOutcome,
  planUser,
  type UserCredits,
  type UserLines,
  type UserPlan,
  writes,
} from './credits-import.plan.ts'
import { createImportedHoldsRepository } from './imported-holds.repository.ts'
import { createImportedUsersRepository } from './imported-users.repository.ts'

export interface CreditsImportDeps {
  db: Db
  clock: Clock
  users: UsersService
  ledger: LedgerService
  holds: HoldsService
  /** HOLD_TTL_HOURS: an imported hold expires this long after the import (0: never). */
  holdTtlHours: number
}

export interface CreditsImportInput {
  /** Balances: `user`, `credits`. */
  balances?: CreditsFile
  /** Open holds: `user`, `broker_parent_order_id`, `credits`, `created_at` [, `broker_account_hash`]. */
  holds?: CreditsFile
  /** Reads and reports, writing nothing. */
  dryRun?: boolean
}

/** What became of one file's lines. */
export interface CreditsFileSummary {
  name: string
  /** The reference its rows carry: `laravel-import:` and 12 hex digits of the file's SHA-256. */
  reference: string
  /** Data lines read (the header and blank lines not counted). */
  lines: number
  /** Lines written now (in a dry run: that would be). */
  imported: number
  /** The credits of those lines, an exact decimal string. */
  importedCredits: string
  /** Lines an earlier import of this same file wrote. */
  alreadyImported: number
  /** Balance lines of 0 credits: nothing to write. */
  zero: number
  /** Lines that cannot be imported (each in `problems`). */
  skipped: number
}

export interface CreditsImportReport {
  dryRun: boolean
  balances: CreditsFileSummary | null
  holds: CreditsFileSummary | null
  /** Users something was written for (would be, in a dry run). */
  users: number
  /** Every line not imported, and why: the balances file's first, each file's by line. */
  problems: LineProblem[]
  /**
   * The earliest time a hold imported now expires unless captured or released (HOLD_TTL_HOURS after
   * its import); null when none was imported or holds never expire.
   */
  holdsExpireFrom: Date | null
}

const OPENING_REASON = 'Opening balance brought across from the Laravel original'
const CHUNK = 1000
// Users imported side by side: each is its own transaction on its own account, so they never wait
// for one another; a few keep the database busy while staying well inside the pool (10 by default).
const USERS_AT_ONCE = 4

/** What happened to each line of one file, and the credits of those imported. */
function tallyOf(file: { name: string; reference: string } | null, unreadLines: LineProblem[]) {
  const outcomes: LineOutcome[] = []
  const problems = [...unreadLines]
  let importedUnits = 0n
  return {
    problems,
    get importedUnits() {
      return importedUnits
    },
    record({ line, units, outcome }: { line: number; units: bigint; outcome: LineOutcome }) {
      outcomes.push(outcome)
      if (typeof outcome === 'object')
        problems.push({ file: file?.name ?? '', line, reason: outcome.problem })
      if (outcome === 'imported') importedUnits += units
    },
    summary(): CreditsFileSummary | null {
      if (!file) return null
      const count = (kind: LineOutcome) => outcomes.filter((outcome) => outcome === kind).length
      const [imported, alreadyImported, zero] = [count('imported'), count('already-imported'), count('zero')]
      return {
        name: file.name,
        reference: file.reference,
        lines: imported + alreadyImported + zero + problems.length,
        imported,
        importedCredits: creditUnitsToString(importedUnits),
        alreadyImported,
        zero,
        skipped: problems.length,
      }
    },
  }
}

/**
 * Brings credits across from the Laravel original (docs/credits.md, "Credits from the Laravel
 * original"): each user's balance as one `opening_balance` ledger row, their open holds as `held`
 * holds, each user's in one transaction under their account lock, as every credit operation. Safe
 * to run again: what an import wrote is found and left as it is.
 */
export function createCreditsImportService({
  db,
  clock,
  users,
  ledger,
  holds,
  holdTtlHours,
}: CreditsImportDeps) {
  const importedUsers = createImportedUsersRepository({ db })

  /** The user id of each key that names a user: emails in any case, old ids through laravel_imported_users. */
  async function resolveUsers(keys: UserKey[]): Promise<Map<string, number>> {
    const emails = [...new Set(keys.flatMap((key) => ('email' in key ? [key.email] : [])))]
    const oldIds = [...new Set(keys.flatMap((key) => ('oldId' in key ? [key.oldId] : [])))]
    const found = new Map<string, number>()
    // In chunks, far below PostgreSQL's limit of parameters in one statement.
    for (let i = 0; i < emails.length; i += CHUNK) {
      const ids = await users.idsByEmails(emails.slice(i, i + CHUNK))
      for (const [email, id] of ids) found.set(userKeyOf({ email }), id)
    }
    for (let i = 0; i < oldIds.length; i += CHUNK) {
      const ids = await importedUsers.userIdsByOldIds(oldIds.slice(i, i + CHUNK))
      for (const [oldId, id] of ids) found.set(userKeyOf({ oldId }), id)
    }
    return found
  }

  /** What the database holds for one user's import, as `tx` (or db) sees it. */
  async function creditsOf(
    tx: Db,
    userId: number,
    orderIds: string[],
    account: CreditAccountRow | undefined,
  ): Promise<UserCredits> {
    const opening = await ledger.firstOfKind(tx, userId, 'opening_balance')
    const existing = await holds.onOrders(tx, userId, orderIds)
    const imported = await createImportedHoldsRepository({ db: tx }).referencesOf(existing.map((h) => h.id))
    return {
      opening: opening && { reference: opening.reference, amount: opening.amount },
      balance: toCreditUnits(account?.balance ?? '0'),
      held: toCreditUnits(account?.held ?? '0'),
      holds: new Map(
        existing.map((hold) => [
          hold.brokerParentOrderId,
          { id: hold.id, importedFrom: imported.get(hold.id) },
        ]),
      ),
    }
  }

  /** Writes the plan's rows, in the user's transaction with their account locked. */
  async function write(tx: Db, userId: number, plan: UserPlan, refs: { balances: string; holds: string }) {
    if (plan.credit !== null) {
      await ledger.append(tx, {
        userId,
        amount: creditUnitsToString(plan.credit),
        kind: 'opening_balance',
        reference: refs.balances,
        reason: OPENING_REASON,
      })
    }
    const importedHolds = createImportedHoldsRepository({ db: tx })
    for (const hold of plan.holds) {
      const placed = await holds.placeImported(tx, {
        userId,
        brokerParentOrderId: hold.orderId,
        brokerAccountHash: hold.accountHash,
        creditsAmount: creditUnitsToString(hold.units),
      })
      // The plan was made under this same lock, so the spendable credits cover the hold.
      if (!placed)
        throw new Error(`the imported hold of order ${hold.orderId} was refused under the account lock`)
      await importedHolds.record({
        holdId: placed.id,
        reference: refs.holds,
        originalCreatedAt: new Date(Number(hold.createdAt.micros / 1000n)),
        importedAt: placed.createdAt,
      })
    }
  }

  /**
   * One user's lines: read first, without a lock (a dry run stops there, and so does a user whose
   * lines are all imported already); to write, read again under the account lock and do what that
   * finds, in that one transaction.
   */
  async function importUser(
    userId: number,
    lines: UserLines,
    refs: { balances: string; holds: string },
    dryRun: boolean,
  ): Promise<UserPlan> {
    const orderIds = lines.holds.map((hold) => hold.orderId)
    const plan = planUser(
      await creditsOf(db, userId, orderIds, await ledger.account(db, userId)),
      lines,
      refs,
    )
    if (dryRun || !writes(plan)) return plan
    return ledger.withLockedAccount(userId, async (tx, account) => {
      const locked = planUser(await creditsOf(tx, userId, orderIds, account), lines, refs)
      await write(tx, userId, locked, refs)
      return locked
    })
  }

  return {
    /**
     * Imports the files' credits, or with dryRun only reports what it would import. A line that
     * cannot be imported is reported with its reason and the others go on. Throws CreditsFileError,
     * having written nothing, when a file cannot be read as a whole.
     */
    async run(input: CreditsImportInput): Promise<CreditsImportReport> {
      if (!input.balances && !input.holds) {
        throw new CreditsFileError('Name a balances file, a holds file, or both.')
      }
      const startedAt = clock.now()
      const dryRun = input.dryRun === true
      // Both files are read whole before anything is written: one that cannot be read stops it all.
      const balancesFile: BalancesFile | null = input.balances ? readBalancesFile(input.balances) : null
      const holdsFile: HoldsFile | null = input.holds ? readHoldsFile(input.holds) : null
      const refs = { balances: balancesFile?.reference ?? '', holds: holdsFile?.reference ?? '' }
      const files = {
        balances: { name: balancesFile?.name ?? '', lines: balancesFile?.lines ?? [] },
        holds: { name: holdsFile?.name ?? '', lines: holdsFile?.lines ?? [] },
      }
      const userIds = await resolveUsers([...files.balances.lines, ...files.holds.lines].map((l) => l.user))
      const perUser = linesPerUser(files, userIds)
      const tally = {
        balances: tallyOf(balancesFile, [...(balancesFile?.problems ?? []), ...perUser.problems.balances]),
        holds: tallyOf(holdsFile, [...(holdsFile?.problems ?? []), ...perUser.problems.holds]),
      }

      const plans = await mapBounded(perUser.users, USERS_AT_ONCE, ([userId, lines]) =>
        importUser(userId, lines, refs, dryRun),
      )
      for (const plan of plans) {
        if (plan.balance) tally.balances.record(plan.balance)
        for (const outcome of plan.holdOutcomes) tally.holds.record(outcome)
      }

      const byLine = (problems: LineProblem[]) => problems.sort((a, b) => a.line - b.line)
      const anyHoldImported = tally.holds.importedUnits > 0n
      return {
        dryRun,
        balances: tally.balances.summary(),
        holds: tally.holds.summary(),
        users: plans.filter(writes).length,
        problems: [...byLine(tally.balances.problems), ...byLine(tally.holds.problems)],
        holdsExpireFrom:
          anyHoldImported && holdTtlHours > 0
            ? new Date(startedAt.getTime() + holdTtlHours * 3_600_000)
            : null,
      }
    },
  }
}

export type CreditsImportService = ReturnType<typeof createCreditsImportService>
