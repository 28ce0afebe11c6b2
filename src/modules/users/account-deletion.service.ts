import type { Db } from '../../db/client.ts'
import type { UserRow } from '../../db/schema/index.ts'
import { forbidden } from '../../lib/errors.ts'
import type { EventBus } from '../../lib/events.ts'
import type { ServiceEvents } from '../../plugins/events.ts'
import type { UsersService } from './users.service.ts'

/** In an account deletion's transaction, what another domain lets go of; answers what to do after commit. */
export type ReleaseAccount = (tx: Db, user: UserRow) => Promise<() => Promise<void>>

/**
 * Deleting an account, whoever does it (the user from their profile, an admin): the account and,
 * by foreign key, everything it owns; its chat groups handed over or deleted in the same
 * transaction; its photo removed once that commits.
 */
export function createAccountDeletionService(deps: {
  db: Db
  users: UsersService
  /** What other domains let go of in the deletion's transaction (chat groups, a password reset token). */
  releases: readonly ReleaseAccount[]
  discardPhoto(path: string | null): Promise<void>
  events: EventBus<ServiceEvents>
}) {
  /** Deletes `user` inside `tx`; answers what to do once `tx` commits. */
  async function deleteWithin(tx: Db, user: UserRow): Promise<() => Promise<void>> {
    const afterCommit: (() => Promise<void>)[] = []
    for (const release of deps.releases) afterCommit.push(await release(tx, user))
    const deleted = await deps.users.within(tx).delete(user)
    return async () => {
      for (const then of afterCommit) await then()
      await deps.discardPhoto(deleted?.profilePhotoPath ?? null)
      // The sessions went with the account, by foreign key; what it holds open (sockets) goes now.
      await deps.events.publish('AccountDeleted', { userId: user.id })
    }
  }

  return {
    deleteWithin,

    /**
     * A user deleting their own account (the password already confirmed). Takes the active admins'
     * row locks, as every admin change does, and refuses (403) when the user is the last admin who
     * can sign in, so the service is never left without one, however the changes interleave.
     */
    async deleteOwnAccount(user: UserRow): Promise<void> {
      const afterCommit = await deps.db.transaction(async (tx) => {
        const admins = await deps.users.within(tx).lockActiveAdmins()
        if (admins.length === 1 && admins[0] === user.id) {
          throw forbidden('The last administrator cannot delete their own account.')
        }
        return deleteWithin(tx, user)
      })
      await afterCommit()
    },
  }
}

export type AccountDeletionService = ReturnType<typeof createAccountDeletionService>
