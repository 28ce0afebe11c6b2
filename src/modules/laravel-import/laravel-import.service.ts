import type { Db } from '../../db/client.ts'
import type { Clock } from '../../lib/clock.ts'
import type { SessionPayloadOptions } from '../../lib/laravel-compat/session-payload.ts'
import type { TwoFactorService } from '../two-factor/two-factor.service.ts'
import type { UsersService } from '../users/users.service.ts'
import {
  count,
  emptySummary,
  type ImportNote,
  type ImportProgress,
  type ImportSummary,
} from './import-summary.ts'
import { createImportedUsersRepository, type ImportedUserLink } from './imported-users.repository.ts'
import type { PhotoCopier } from './photo-copy.ts'
import { createSessionImport } from './session-import.ts'
import { LaravelSchemaError, type LaravelSource, type LaravelUser } from './sources/laravel-source.ts'
import {
  type MappedUser,
  mapLaravelUser,
  type UserMappingContext,
  type UserSkipReason,
} from './user-mapping.ts'

export const DEFAULT_BATCH_SIZE = 500
// Photos read and stored at once within a batch.
const PHOTO_CONCURRENCY = 8

export interface LaravelImportDeps {
  db: Db
  clock: Clock
  users: UsersService
  twoFactor: TwoFactorService
  /** This service's APP_KEY: imported sessions are keyed by a token only it can derive. */
  appKey: string
  /** SESSION_LIFETIME: only sessions active within it are brought across. */
  sessionLifetimeMinutes: number
}

export interface LaravelImportRun {
  source: LaravelSource
  /** The original's APP_KEY, then its APP_PREVIOUS_KEYS (laravelKeys). */
  keys: readonly string[]
  photos: PhotoCopier
  /** How to read the original's session payloads; left out, sessions are not imported. */
  sessions?: SessionPayloadOptions
  /** Reads and checks everything, writes nothing. */
  dryRun: boolean
  batchSize?: number
  onProgress?(progress: ImportProgress): void
  onNote?(note: ImportNote): void
}

const lower = (email: string) => email.trim().toLowerCase()

/** Runs `task` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await task(items[next++] as T)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

/**
 * `import:laravel`: the Laravel original's users (with their password hashes, two-factor secrets
 * and photos) and, when asked, its live sessions, brought across in batches keyed by the old ids.
 * Each batch is one transaction, so a crash leaves no user half-imported; a user imported before
 * (by old id) is left as it is, so running it again changes nothing already there.
 */
export function createLaravelImportService(deps: LaravelImportDeps) {
  const { db, clock, users, twoFactor } = deps
  const importSessions = createSessionImport(deps)

  async function run(options: LaravelImportRun): Promise<ImportSummary> {
    const { source, photos, dryRun } = options
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE
    const note = (entry: ImportNote) => options.onNote?.(entry)
    const summary = emptySummary(dryRun)
    const schema = await source.schema()
    if (options.sessions && !schema.sessions) {
      throw new LaravelSchemaError(
        `${source.label} has no sessions table (the original's SESSION_DRIVER is not database?).`,
      )
    }
    const context: UserMappingContext = {
      keys: options.keys,
      sealSecret: twoFactor.sealSecret,
      sealRecoveryCodes: twoFactor.sealRecoveryCodes,
      confirmation: schema.twoFactorConfirmation,
      now: clock.now(),
    }
    // The source's own duplicates (case aside): the lowest id keeps the email.
    const sharedEmails = await source.sharedEmails()
    // Old ids of users not imported: the few a dry run must know when it looks at their sessions.
    const skippedUsers = new Set<number>()
    const skip = (oldId: number, reason: UserSkipReason) => {
      count(summary.users.skipped, reason)
      skippedUsers.add(oldId)
      note({ kind: 'user-skipped', oldId, reason })
    }

    /** The batch's users this run may import: not imported before, readable, emails free. */
    async function candidatesOf(rows: LaravelUser[]): Promise<MappedUser[]> {
      const imported = await createImportedUsersRepository({ db }).userIdsByOldIds(rows.map((row) => row.id))
      const candidates: MappedUser[] = []
      const emails = new Set<string>()
      for (const row of rows) {
        if (imported.has(row.id)) {
          summary.users.alreadyImported++
          continue
        }
        const first = sharedEmails.get(lower(row.email ?? ''))
        if (first !== undefined && first !== row.id) {
          skip(row.id, 'duplicate-email')
          continue
        }
        const mapping = mapLaravelUser(row, context)
        if ('skip' in mapping) {
          skip(row.id, mapping.skip)
          continue
        }
        const email = lower(mapping.mapped.user.email)
        if (emails.has(email)) {
          skip(row.id, 'duplicate-email')
          continue
        }
        emails.add(email)
        candidates.push(mapping.mapped)
      }
      const taken = await users.takenEmails([...emails])
      return candidates.filter((candidate) => {
        if (!taken.has(lower(candidate.user.email))) return true
        skip(candidate.oldId, 'duplicate-email')
        return false
      })
    }

    /** Copies the candidates' photos (dry run: checks them): their new paths by old id. */
    async function copyPhotos(candidates: MappedUser[]): Promise<Map<number, string>> {
      const paths = new Map<number, string>()
      const withPhoto = candidates.filter((candidate) => candidate.oldPhotoPath !== null)
      await eachLimited(withPhoto, PHOTO_CONCURRENCY, async ({ oldId, oldPhotoPath }) => {
        const copy = await photos.copy(oldId, oldPhotoPath as string, { dryRun })
        if ('path' in copy) paths.set(oldId, copy.path)
        else {
          count(summary.users.withoutPhoto, copy.note)
          note({ kind: 'user-without-photo', oldId, note: copy.note })
        }
      })
      return paths
    }

    const counted = (candidate: MappedUser) => {
      summary.users.imported++
      if (candidate.user.twoFactorSecret === null) return
      if (candidate.user.twoFactorConfirmedAt) summary.users.twoFactor++
      else summary.users.twoFactorUnconfirmed++
    }

    /** Inserts the candidates and their links in one transaction; answers the old ids inserted. */
    async function insert(candidates: MappedUser[], photoPaths: Map<number, string>) {
      return db.transaction(async (tx) => {
        const repo = createImportedUsersRepository({ db: tx })
        await repo.lock()
        // Another import may have brought some across since candidatesOf looked.
        const racing = await repo.userIdsByOldIds(candidates.map((candidate) => candidate.oldId))
        const fresh = candidates.filter((candidate) => !racing.has(candidate.oldId))
        const inserted = await users
          .within(tx)
          .importMany(
            fresh.map(({ oldId, user }) => ({ ...user, profilePhotoPath: photoPaths.get(oldId) ?? null })),
          )
        const idByEmail = new Map(inserted.map((row) => [row.email, row.id]))
        const links: ImportedUserLink[] = []
        for (const { oldId, user, rememberTokenDigest, legacyPasswordHash } of fresh) {
          const userId = idByEmail.get(lower(user.email))
          if (userId !== undefined) links.push({ oldId, userId, rememberTokenDigest, legacyPasswordHash })
        }
        await repo.insert(links)
        return { racing, linked: new Set(links.map((link) => link.oldId)) }
      })
    }

    async function importUsers(): Promise<void> {
      summary.users.total = await source.countUsers()
      let done = 0
      for (let afterId = 0; ; ) {
        const rows = await source.users(afterId, batchSize)
        if (rows.length === 0) break
        afterId = (rows.at(-1) as LaravelUser).id
        const candidates = await candidatesOf(rows)
        const photoPaths = await copyPhotos(candidates)
        if (dryRun) {
          for (const candidate of candidates) counted(candidate)
        } else if (candidates.length > 0) {
          const { racing, linked } = await insert(candidates, photoPaths)
          for (const candidate of candidates) {
            if (linked.has(candidate.oldId)) counted(candidate)
            else if (racing.has(candidate.oldId)) summary.users.alreadyImported++
            else {
              // Its email was taken between the check and the insert (a registration here).
              skip(candidate.oldId, 'duplicate-email')
              const path = photoPaths.get(candidate.oldId)
              if (path) await photos.discard(path)
            }
          }
        }
        done += rows.length
        options.onProgress?.({ phase: 'users', done, total: summary.users.total })
      }
    }

    await importUsers()
    if (options.sessions) {
      summary.sessions = await importSessions({
        source,
        keys: options.keys,
        payload: options.sessions,
        dryRun,
        batchSize,
        skippedUsers,
        note,
        onProgress: options.onProgress,
      })
    }
    return summary
  }

  return { run }
}

export type LaravelImportService = ReturnType<typeof createLaravelImportService>
