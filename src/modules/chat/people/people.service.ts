import type { UserRow } from '../../../db/schema/index.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import type { UsersService } from '../../users/users.service.ts'
import type { ChatDeps } from '../chat.deps.ts'
import { userNotFound } from '../chat.errors.ts'
import { presentChatUser } from '../chat.presenters.ts'
import { createGroupsRepository } from '../groups/groups.repository.ts'
import type { PersonResponse, PersonStatusResponse } from './people.schemas.ts'

/** Other users as a chat member sees them: only those who share a group with the caller. */
export function createPeopleService(
  deps: Pick<ChatDeps, 'db' | 'clock' | 'appUrl' | 'presence'> & { users: UsersService },
) {
  const { db, clock, appUrl, users } = deps
  const groups = createGroupsRepository({ db })

  /** The user `id` if the caller may see them (themselves, or someone in a group of theirs). */
  async function visible(viewer: UserRow, id: number): Promise<UserRow> {
    const user = id === viewer.id ? viewer : await users.findById(id)
    if (!user || (id !== viewer.id && !(await groups.shareAGroup(viewer.id, id)))) throw userNotFound(id)
    return user
  }

  return {
    /** Name, photo and since when: never an email address. */
    async profile(viewer: UserRow, id: number): Promise<PersonResponse['data']> {
      const user = await visible(viewer, id)
      return { ...presentChatUser(user, appUrl), created_at: laravelDate(user.createdAt) }
    },

    /** Whether they have a live socket (the app open somewhere), and when their last one closed. */
    async status(viewer: UserRow, id: number): Promise<PersonStatusResponse['data']> {
      await visible(viewer, id)
      const online = (await deps.presence.online([id])).has(id)
      const lastSeen = online ? clock.now() : await deps.presence.lastSeen(id)
      return { id, online, last_seen_at: laravelDate(lastSeen) }
    },
  }
}
