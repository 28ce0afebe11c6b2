import type { CreditsFileSummary, CreditsImportReport } from './credits-import.service.ts'

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

function fileLine(file: CreditsFileSummary, dryRun: boolean): string {
  const parts = [
    `${file.imported} ${dryRun ? 'to import' : 'imported'} (${Number(file.importedCredits)} credits)`,
    `${file.alreadyImported} already imported`,
  ]
  if (file.zero > 0) parts.push(`${file.zero} of 0 credits (nothing to write)`)
  parts.push(`${file.skipped} not imported`)
  return `  ${file.name} (${file.reference}): ${plural(file.lines, 'line')}: ${parts.join(', ')}\n`
}

/**
 * `import:laravel-credits`'s summary (stdout): per file, what its lines became; and the lines not
 * imported, one each with its reason (stderr), for the operator to correct and import again.
 */
export function formatCreditsImportReport(
  report: CreditsImportReport,
  where: string,
): { summary: string; problems: string } {
  let summary = `Laravel credits import (${where})${report.dryRun ? ': dry run, nothing written' : ''}.\n`
  if (report.balances) summary += fileLine(report.balances, report.dryRun)
  if (report.holds) summary += fileLine(report.holds, report.dryRun)
  summary += `  ${plural(report.users, 'user')} ${report.dryRun ? 'would get' : 'got'} credits or holds.\n`
  if (report.holdsExpireFrom) {
    summary += `  The holds ${report.dryRun ? 'it would import' : 'imported'} expire from ${report.holdsExpireFrom.toISOString()} (HOLD_TTL_HOURS after their import) unless captured or released.\n`
  }
  const problems = report.problems.map(
    (problem) => `${problem.file} line ${problem.line}: ${problem.reason}\n`,
  )
  return { summary, problems: problems.length > 0 ? `Not imported:\n${problems.join('')}` : '' }
}
