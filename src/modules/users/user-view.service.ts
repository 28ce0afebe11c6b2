import type { UserRow } from '../../db/schema/index.ts'
import { type CreditSummary, presentUser } from './users.presenters.ts'
import type { UserResponse } from './users.schemas.ts'

/**
 * The signed-in user as the app sees them (GET /api/user, and every answer that returns the user):
 * the user row with their credit figures.
 */
export function createUserViewService(deps: {
  appUrl: string
  creditsOf(userId: number): Promise<CreditSummary>
}) {
  return {
    async present(user: UserRow): Promise<UserResponse> {
      return presentUser(user, { appUrl: deps.appUrl, credits: await deps.creditsOf(user.id) })
    },
  }
}

export type UserViewService = ReturnType<typeof createUserViewService>
