import type { ThrottleRule } from '../../plugins/guards.ts'

/**
 * Every route that checks the signed-in user's current password shares one count per user (10 per
 * 10 minutes, whatever the answer), so a stolen session cannot be used to guess the password.
 */
export const currentPasswordThrottle: ThrottleRule = {
  name: 'current-password',
  max: 10,
  decaySeconds: 600,
  key: (request) => String(request.user?.id),
}
