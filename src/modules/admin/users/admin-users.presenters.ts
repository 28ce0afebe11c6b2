import type { UserRow } from '../../../db/schema/index.ts'
import { laravelDate } from '../../../lib/laravel.ts'
import { type CreditSummary, presentUser } from '../../users/users.presenters.ts'
import type { AdminUserResponse } from './admin-users.schemas.ts'

/** The app's user object (the same allow-list: no password or 2FA secrets) plus the block state. */
export function presentAdminUser(
  user: UserRow,
  options: { appUrl: string; credits: CreditSummary },
): AdminUserResponse {
  return {
    ...presentUser(user, options),
    blocked_at: laravelDate(user.blockedAt),
    is_blocked: user.blockedAt !== null,
  }
}
