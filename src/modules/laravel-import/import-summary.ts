import type { PhotoNote } from './photo-copy.ts'
import type { SessionSkipReason } from './session-mapping.ts'
import type { UserSkipReason } from './user-mapping.ts'

/** What one run did (or, with --dry-run, would do); counts only, so it stays small however many rows. */
export interface ImportSummary {
  dryRun: boolean
  users: {
    /** Users in the source. */
    total: number
    imported: number
    /** Of those imported, with two-factor on (confirmed), and with a secret not yet confirmed. */
    twoFactor: number
    twoFactorUnconfirmed: number
    /** Imported by an earlier run (by their old id): left as they are. */
    alreadyImported: number
    skipped: Partial<Record<UserSkipReason, number>>
    /** Imported, but without their photo. */
    withoutPhoto: Partial<Record<PhotoNote, number>>
  }
  /** Set when sessions were asked for. */
  sessions?: {
    /** Sessions active within this service's SESSION_LIFETIME, and the older ones left behind. */
    live: number
    expired: number
    imported: number
    alreadyImported: number
    skipped: Partial<Record<SessionSkipReason, number>>
  }
}

/** One row the import could not take whole, as it happens (for the operator's report; no secrets). */
export type ImportNote =
  | { kind: 'user-skipped'; oldId: number; reason: UserSkipReason }
  | { kind: 'user-without-photo'; oldId: number; note: PhotoNote }
  | { kind: 'session-skipped'; oldUserId: number | null; reason: SessionSkipReason }

export interface ImportProgress {
  phase: 'users' | 'sessions'
  done: number
  total: number
}

export function emptySummary(dryRun: boolean): ImportSummary {
  return {
    dryRun,
    users: {
      total: 0,
      imported: 0,
      twoFactor: 0,
      twoFactorUnconfirmed: 0,
      alreadyImported: 0,
      skipped: {},
      withoutPhoto: {},
    },
  }
}

/** Adds one to `counts[key]`. */
export function count<K extends string>(counts: Partial<Record<K, number>>, key: K): void {
  counts[key] = (counts[key] ?? 0) + 1
}
