import { sessionLoginKey } from '../../lib/laravel-compat/session-guard.ts'
import { readSessionPayload, type SessionPayloadOptions } from '../../lib/laravel-compat/session-payload.ts'
import type { LaravelSession } from './sources/laravel-source.ts'
import { toOptionalId } from './sources/source-values.ts'

/** Why a live session of the original is not imported. */
export type SessionSkipReason = 'guest' | 'user-not-imported' | 'payload-unreadable' | 'no-csrf-token'

export const SESSION_SKIP_REASONS: Record<SessionSkipReason, string> = {
  guest: 'nobody is signed in on it',
  'user-not-imported': 'its user is not (or would not be) imported',
  'payload-unreadable': 'its payload could not be read (encrypted under another key, or not serialized data)',
  'no-csrf-token': 'its payload holds no _token',
}

/** A signed-in session of the original, as the import needs it. */
export interface MappedSession {
  oldId: string
  oldUserId: number
  /** The session's `_token`: what the SPA's XSRF-TOKEN cookie holds, so its next write passes. */
  csrfToken: string
  ipAddress: string | null
  userAgent: string | null
  lastActivity: number
}

export type SessionMapping = { mapped: MappedSession } | { skip: SessionSkipReason }

const LOGIN_KEY = sessionLoginKey()

/**
 * Its user (the payload's `login_web_<sha1>`, which SessionGuard keeps, else the `user_id` column
 * the database driver writes beside it) and its CSRF token, or why it is not imported.
 */
export function mapLaravelSession(row: LaravelSession, options: SessionPayloadOptions): SessionMapping {
  let attributes: ReturnType<typeof readSessionPayload>
  try {
    attributes = readSessionPayload(row.payload, options)
  } catch {
    return { skip: 'payload-unreadable' }
  }
  const oldUserId = toOptionalId(attributes.get(LOGIN_KEY)) ?? row.userId
  if (oldUserId === null) return { skip: 'guest' }
  const token = attributes.get('_token')
  if (typeof token !== 'string' || token === '') return { skip: 'no-csrf-token' }
  return {
    mapped: {
      oldId: row.id,
      oldUserId,
      csrfToken: token,
      ipAddress: row.ipAddress,
      userAgent: row.userAgent,
      lastActivity: row.lastActivity,
    },
  }
}
