import type { UserRow } from '../../db/schema/index.ts'
import { USER_CHANNEL } from '../../plugins/realtime.ts'
import { presentChatUser } from '../chat/chat.presenters.ts'
import type { ChatUser } from '../chat/chat.schemas.ts'
import type { GroupsService } from '../chat/groups/groups.service.ts'

const GROUP_CHANNEL = /^(private|presence)-chat\.group\.(\d{1,15})$/

/** Who may join a channel: false, or yes (with the member's user_info on a presence channel). */
export type ChannelDecision = false | { userInfo?: ChatUser }

/** The app's channels (Laravel's routes/channels.php): the user's own channel and their groups' channels. */
export function createChannelRules(deps: { groups: GroupsService; appUrl: string }) {
  return async (user: UserRow, channel: string): Promise<ChannelDecision> => {
    const own = USER_CHANNEL.exec(channel)
    if (own) return Number(own[1]) === user.id ? {} : false
    const group = GROUP_CHANNEL.exec(channel)
    if (group && (await deps.groups.isMember(Number(group[2]), user.id))) {
      return group[1] === 'presence' ? { userInfo: presentChatUser(user, deps.appUrl) } : {}
    }
    return false
  }
}
