import { eq, sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { createUser } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { creditAccounts, creditPurchases, creditTransactions } from '../../db/schema/index.ts'
import { systemClock } from '../../lib/clock.ts'
import { createLedgerService } from './ledger.service.ts'
import { auditLedger } from './ledger-audit.ts'
import { createPurchasesRepository } from './purchases/purchases.repository.ts'

const t = appUnderTest()

const failedChecks = async () => (await auditLedger(t.database.db)).failed.map((failure) => failure.check)

/** A paid purchase of 100 credits, 30 of them refunded: rows written as the webhook writes them. */
async function refundedPurchase() {
  const db = t.database.db
  const { user } = await createUser(db)
  const ledger = createLedgerService({ db, clock: systemClock })
  const sessionId = `cs_test_audit_${user.id}`
  await createPurchasesRepository({ db }).record({
    userId: user.id,
    checkoutSessionId: sessionId,
    packageId: 'starter',
    credits: '100',
    amount: 900,
    currency: 'usd',
    createdAt: new Date(),
  })
  const purchase = await createPurchasesRepository({ db }).findBySession(sessionId)
  if (!purchase) throw new Error('no purchase')
  await ledger.withLockedAccount(user.id, async (tx) => {
    await ledger.append(tx, {
      userId: user.id,
      amount: '100',
      kind: 'purchase',
      reference: sessionId,
      purchaseId: purchase.id,
    })
    await ledger.append(tx, {
      userId: user.id,
      amount: '-30',
      kind: 'refund',
      reference: 're_1',
      purchaseId: purchase.id,
    })
    await createPurchasesRepository({ db: tx }).update(
      purchase.id,
      { status: 'paid', amountRefunded: 270, creditsRefunded: '30' },
      new Date(),
    )
  })
  return { user, purchase }
}

describe('the ledger audit over refunds and disputes', () => {
  it('holds for a refunded purchase, and names each invariant a tampered row breaks', async () => {
    const { user, purchase } = await refundedPurchase()
    expect(await failedChecks()).toEqual([])

    await t.database.db
      .update(creditPurchases)
      .set({ creditsRefunded: '0' })
      .where(eq(creditPurchases.id, purchase.id))
    expect(await failedChecks()).toEqual(["refund rows differ from the purchase's refunded credits"])
    await t.database.db
      .update(creditPurchases)
      .set({ creditsRefunded: '30' })
      .where(eq(creditPurchases.id, purchase.id))

    await t.database.db
      .update(creditPurchases)
      .set({ disputeStatus: 'open', creditsDisputed: '80' })
      .where(eq(creditPurchases.id, purchase.id))
    expect(await failedChecks()).toEqual([
      "dispute rows differ from the purchase's dispute",
      'more taken back than a purchase credited',
    ])
    await t.database.db
      .update(creditPurchases)
      .set({ disputeStatus: null, creditsDisputed: '0' })
      .where(eq(creditPurchases.id, purchase.id))

    await t.database.db
      .update(creditTransactions)
      .set({ purchaseId: null })
      .where(eq(creditTransactions.kind, 'refund'))
    expect(await failedChecks()).toEqual([
      "refund rows differ from the purchase's refunded credits",
      'reversals without a purchase',
    ])
    await t.database.db
      .update(creditTransactions)
      .set({ purchaseId: purchase.id })
      .where(eq(creditTransactions.kind, 'refund'))

    await t.database.db
      .update(creditTransactions)
      .set({ amount: '90' })
      .where(eq(creditTransactions.kind, 'purchase'))
    expect(await failedChecks()).toContain(
      'paid purchases without exactly one purchase credit of their credits',
    )
    await t.database.db
      .update(creditTransactions)
      .set({ amount: '100' })
      .where(eq(creditTransactions.kind, 'purchase'))
    expect(await failedChecks()).toEqual([])

    // Held above the balance (75 > 70 and 75 > 0): allowed only for the user a refund took credits from.
    const { user: plain } = await createUser(t.database.db)
    await t.database.db
      .insert(creditAccounts)
      .values({ userId: plain.id, balance: '0', held: '0', createdAt: new Date(), updatedAt: new Date() })
    await t.database.db.execute(
      sql`update credit_accounts set held = 75 where user_id in (${plain.id}, ${user.id})`,
    )
    const failed = await failedChecks()
    expect(failed).toContain(
      'account held negative, or above the balance without a reversal or an answer paid',
    )
    const problems = (await auditLedger(t.database.db)).failed.find(
      (f) => f.check === 'account held negative, or above the balance without a reversal or an answer paid',
    )?.problems
    expect(problems).toBe(1)
  })
})
