import type { ImportNote, ImportProgress, ImportSummary } from './import-summary.ts'
import { PHOTO_NOTES } from './photo-copy.ts'
import { SESSION_SKIP_REASONS } from './session-mapping.ts'
import { USER_SKIP_REASONS } from './user-mapping.ts'

// What the operator reads: counts, old ids and reasons; never a secret, a session id or an email.

const number = (n: number) => n.toLocaleString('en-US')

/** One row not taken whole, as a line: `user 17: skipped (duplicate-email)`. */
export function formatImportNote(note: ImportNote, dryRun: boolean): string {
  const would = dryRun ? 'would be ' : ''
  switch (note.kind) {
    case 'user-skipped':
      return `user ${note.oldId}: ${would}skipped (${note.reason})`
    case 'user-without-photo':
      return `user ${note.oldId}: ${would}imported without its photo (${note.note})`
    case 'session-skipped':
      return `a session of ${note.oldUserId === null ? 'no user' : `user ${note.oldUserId}`}: ${would}skipped (${note.reason})`
  }
}

function reasonLines(
  title: string,
  counts: Partial<Record<string, number>>,
  meaning: Record<string, string>,
) {
  return Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([reason, n]) => `  ${title} ${reason}: ${number(n ?? 0)} (${meaning[reason] ?? reason})\n`)
    .join('')
}

const sum = (counts: Partial<Record<string, number>>) =>
  Object.values(counts).reduce<number>((total, n) => total + (n ?? 0), 0)

/** The summary at the end: imported, already there, and skipped by reason. */
export function formatImportSummary(summary: ImportSummary, where: { from: string; into: string }): string {
  const { users, sessions, dryRun } = summary
  const imported = dryRun ? 'would be imported' : 'imported'
  let text = `Laravel import from ${where.from} into ${where.into}${dryRun ? ' (dry run: nothing was written)' : ''}\n`
  text +=
    `Users: ${number(users.total)} in the original; ${number(users.imported)} ${imported} ` +
    `(${number(users.twoFactor)} with two-factor on, ${number(users.twoFactorUnconfirmed)} with two-factor set up but not confirmed), ` +
    `${number(users.alreadyImported)} already imported, ${number(sum(users.skipped))} skipped\n`
  text += reasonLines('skipped', users.skipped, USER_SKIP_REASONS)
  text += reasonLines('without its photo,', users.withoutPhoto, PHOTO_NOTES)
  if (sessions) {
    text +=
      `Sessions: ${number(sessions.live)} live; ${number(sessions.imported)} ${imported}, ` +
      `${number(sessions.alreadyImported)} already imported, ${number(sum(sessions.skipped))} skipped; ` +
      `${number(sessions.expired)} idle longer than SESSION_LIFETIME left behind\n`
    text += reasonLines('skipped', sessions.skipped, SESSION_SKIP_REASONS)
  }
  return text
}

/** The progress line on a terminal: `users 1,500 / 100,000 (1%)`. */
export function progressLine({ phase, done, total }: ImportProgress): string {
  const percent = total > 0 ? ` (${Math.min(100, Math.floor((done / total) * 100))}%)` : ''
  return `${phase} ${number(done)} / ${number(total)}${percent}`
}
