import type { Db } from '../../db/client.ts'
import type { SessionRow } from '../../db/schema/index.ts'
import { type Clock, unixSeconds } from '../../lib/clock.ts'
import type { SessionPayloadOptions } from '../../lib/laravel-compat/session-payload.ts'
import { hashSessionToken } from '../../lib/sessions/session-store.ts'
import { createSessionsRepository } from '../../lib/sessions/sessions.repository.ts'
import { count, type ImportNote, type ImportProgress, type ImportSummary } from './import-summary.ts'
import { createImportedUsersRepository } from './imported-users.repository.ts'
import { legacySessionToken } from './legacy-session-token.ts'
import { type MappedSession, mapLaravelSession } from './session-mapping.ts'
import type { LaravelSource } from './sources/laravel-source.ts'

export type SessionImportSummary = NonNullable<ImportSummary['sessions']>

export interface SessionImportRun {
  source: LaravelSource
  /** The original's keys: an encrypted payload (SESSION_ENCRYPT=true) opens with them. */
  keys: readonly string[]
  payload: SessionPayloadOptions
  dryRun: boolean
  batchSize: number
  /** Old ids of the users this run did not import (a dry run's stand-in for what it did not write). */
  skippedUsers: ReadonlySet<number>
  note(entry: ImportNote): void
  onProgress?(progress: ImportProgress): void
}

/**
 * The database session driver's live sessions (active within SESSION_LIFETIME) whose user was
 * imported: each becomes a session here under the token legacySessionToken derives from its old id,
 * with its user, CSRF token, last activity, address and agent. One statement per batch; a session
 * present already is left as it is.
 */
export function createSessionImport(deps: {
  db: Db
  clock: Clock
  appKey: string
  sessionLifetimeMinutes: number
}) {
  const { db, clock, appKey } = deps

  /** Our user ids of the sessions' old users; a dry run counts those it would import as imported (id 0). */
  async function ownersOf(run: SessionImportRun, sessions: MappedSession[]) {
    const oldIds = [...new Set(sessions.map((session) => session.oldUserId))]
    const imported = await createImportedUsersRepository({ db }).userIdsByOldIds(oldIds)
    if (!run.dryRun) return (oldUserId: number) => imported.get(oldUserId)
    const inSource = await run.source.existingUserIds(oldIds.filter((id) => !imported.has(id)))
    return (oldUserId: number) =>
      imported.get(oldUserId) ?? (inSource.has(oldUserId) && !run.skippedUsers.has(oldUserId) ? 0 : undefined)
  }

  return async function importSessions(run: SessionImportRun): Promise<SessionImportSummary> {
    const now = unixSeconds(clock)
    const activeSince = now - deps.sessionLifetimeMinutes * 60
    const summary: SessionImportSummary = {
      ...(await run.source.countSessions(activeSince)),
      imported: 0,
      alreadyImported: 0,
      skipped: {},
    }
    const readOptions = { keys: run.keys, ...run.payload }
    const sessionsRepo = createSessionsRepository({ db })
    let done = 0
    for (let afterId = ''; ; ) {
      const rows = await run.source.sessions(afterId, activeSince, run.batchSize)
      if (rows.length === 0) break
      afterId = (rows.at(-1) as { id: string }).id
      const mapped: MappedSession[] = []
      for (const row of rows) {
        const mapping = mapLaravelSession(row, readOptions)
        if ('mapped' in mapping) mapped.push(mapping.mapped)
        else {
          count(summary.skipped, mapping.skip)
          // Guest sessions are many and say nothing: counted only.
          if (mapping.skip !== 'guest') {
            run.note({ kind: 'session-skipped', oldUserId: row.userId, reason: mapping.skip })
          }
        }
      }
      const ownerOf = await ownersOf(run, mapped)
      const toWrite: SessionRow[] = []
      for (const session of mapped) {
        const userId = ownerOf(session.oldUserId)
        if (userId === undefined) {
          count(summary.skipped, 'user-not-imported')
          run.note({ kind: 'session-skipped', oldUserId: session.oldUserId, reason: 'user-not-imported' })
          continue
        }
        toWrite.push({
          id: hashSessionToken(legacySessionToken(session.oldId, appKey)),
          userId,
          ipAddress: session.ipAddress?.slice(0, 45) ?? null,
          userAgent: session.userAgent?.slice(0, 500) ?? null,
          payload: { csrfToken: session.csrfToken },
          lastActivity: session.lastActivity,
          // Laravel keeps no start time: the absolute lifetime counts from the cutover.
          createdAt: now,
          rememberTokenId: null,
        })
      }
      if (run.dryRun) {
        // Sessions present already (any age): what an earlier run brought across.
        const ids = toWrite.map((row) => row.id)
        const present =
          ids.length === 0 ? [] : await sessionsRepo.findLiveIds(ids, { lastActivity: 0, createdAt: 0 })
        summary.imported += toWrite.length - present.length
        summary.alreadyImported += present.length
      } else {
        const inserted = await sessionsRepo.insertMissing(toWrite)
        summary.imported += inserted
        summary.alreadyImported += toWrite.length - inserted
      }
      done += rows.length
      run.onProgress?.({ phase: 'sessions', done, total: summary.live })
    }
    return summary
  }
}
