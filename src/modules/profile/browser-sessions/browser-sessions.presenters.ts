import type { RememberTokenRow, SessionRow } from '../../../db/schema/index.ts'
import { diffForHumans, laravelDate } from '../../../lib/laravel.ts'
import { parseUserAgent } from '../../../lib/user-agent.ts'
import type { BrowserSessionResponse } from './browser-sessions.schemas.ts'

/** Jetstream's session entry: device, address, whether it is this one, and when it was last used. */
export function presentBrowserSession(
  row: SessionRow,
  currentSessionId: string | undefined,
  now: Date,
): BrowserSessionResponse {
  return present(row, row.lastActivity, row.id === currentSessionId, row.rememberTokenId !== null, now)
}

/** A remembered device whose session has ended: it signs in again on its next request. */
export function presentRememberedDevice(row: RememberTokenRow, now: Date): BrowserSessionResponse {
  return present(row, row.lastUsedAt, false, true, now)
}

function present(
  row: { userAgent: string | null; ipAddress: string | null },
  lastActiveSeconds: number,
  current: boolean,
  remembered: boolean,
  now: Date,
): BrowserSessionResponse {
  const lastActive = new Date(lastActiveSeconds * 1000)
  return {
    agent: parseUserAgent(row.userAgent),
    ip_address: row.ipAddress,
    is_current_device: current,
    last_active: diffForHumans(lastActive, now),
    last_active_at: laravelDate(lastActive),
    remembered,
  }
}
