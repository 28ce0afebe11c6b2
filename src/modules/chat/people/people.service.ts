import type { UserRow } from '../../../db/schema/index.ts'
import { unixSeconds } from '../../../lib/clock.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import { createUsersService } from '../../users/users.service.ts'
import { userNotFound } from '../chat.errors.ts'
import { presentChatUser } from '../chat.presenters.ts'
import { createGroupsRepository } from '../groups/groups.repository.ts'
import { type ChatDeps, ONLINE_WINDOW_SECONDS } from '../groups/groups.service.ts'
import type { PersonResponse, PersonStatusResponse } from './people.schemas.ts'

/** Other users as a chat member sees them: only those who share a group with the caller. */
export function createPeopleService(
  deps: Pick<ChatDeps, 'db' | 'clock' | 'appUrl'> & { sessionLifetimeMinutes: number },
) {
  const { db, clock, appUrl } = deps
  const users = createUsersService({ db, clock })
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

    /** Whether they are online (session activity in the last 5 minutes) and when they were last seen. */
    async status(viewer: UserRow, id: number): Promise<PersonStatusResponse['data']> {
      await visible(viewer, id)
      const now = unixSeconds(clock)
      const lastSeen = await groups.lastSeen(id, now - deps.sessionLifetimeMinutes * 60)
      return {
        id,
        online: lastSeen !== null && lastSeen >= now - ONLINE_WINDOW_SECONDS,
        last_seen_at: lastSeen === null ? null : laravelDate(new Date(lastSeen * 1000)),
      }
    },
  }
}
