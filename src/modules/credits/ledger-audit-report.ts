import type { LedgerAudit } from './ledger-audit.ts'

/**
 * `ledger:audit`'s report: one short line when every check holds; else every check, the failed
 * ones first with how many rows (of the ledger, the accounts or the holds) break each.
 */
export function formatLedgerAudit(audit: LedgerAudit, where: string): string {
  const total = audit.checks.length
  if (audit.failed.length === 0) return `Ledger audit (${where}): all ${total} checks hold.\n`
  const failed = audit.failed.map((check) => `  FAILED  ${check.check}: ${check.problems} found\n`)
  const held = audit.checks
    .filter((check) => check.problems === 0)
    .map((check) => `  ok      ${check.check}\n`)
  return (
    `Ledger audit (${where}): ${audit.failed.length} of ${total} checks failed.\n` +
    failed.join('') +
    held.join('')
  )
}
