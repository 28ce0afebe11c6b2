import type { UserRow } from '../../db/schema/index.ts'
import { laravelDate, publicStorageUrl } from '../../lib/laravel.ts'
import type { UserResponse } from './users.schemas.ts'

export interface CreditSummary {
  available_credits: number
  held_credits: number
  credits_available_for_automation: number
}

// A user shown without a summary (a brand-new one, say) has no credits.
const noCredits: CreditSummary = {
  available_credits: 0,
  held_credits: 0,
  credits_available_for_automation: 0,
}

export interface PresentUserOptions {
  /** APP_URL, the base of the profile photo's public URL. */
  appUrl: string
  credits?: CreditSummary
}

/** A user row as the app sees it: an allow-list, so secrets (password, 2FA) can never leak by addition. */
export function presentUser(
  user: UserRow,
  { appUrl, credits = noCredits }: PresentUserOptions,
): UserResponse {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    email_verified_at: laravelDate(user.emailVerifiedAt),
    is_admin: user.isAdmin,
    two_factor_enabled: user.twoFactorConfirmedAt !== null,
    profile_photo_url: user.profilePhotoPath ? publicStorageUrl(appUrl, user.profilePhotoPath) : null,
    phone: user.phone,
    timezone: user.timezone,
    country: user.country,
    ...credits,
    created_at: laravelDate(user.createdAt),
    updated_at: laravelDate(user.updatedAt),
  }
}
