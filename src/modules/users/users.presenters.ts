import type { UserRow } from '../../db/schema/index.ts'
import { laravelDate } from '../../lib/laravel.ts'
import type { UserResponse } from './users.schemas.ts'

export interface CreditSummary {
  available_credits: number
  held_credits: number
  credits_available_for_automation: number
}

// Until the credits ledger exists every user has none.
const noCredits: CreditSummary = {
  available_credits: 0,
  held_credits: 0,
  credits_available_for_automation: 0,
}

/** A user row as the app sees it: an allow-list, so secrets (password, 2FA) can never leak by addition. */
export function presentUser(user: UserRow, credits: CreditSummary = noCredits): UserResponse {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    email_verified_at: laravelDate(user.emailVerifiedAt),
    is_admin: user.isAdmin,
    two_factor_enabled: user.twoFactorConfirmedAt !== null,
    ...credits,
    created_at: laravelDate(user.createdAt),
    updated_at: laravelDate(user.updatedAt),
  }
}
