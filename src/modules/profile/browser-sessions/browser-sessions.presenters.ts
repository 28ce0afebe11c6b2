import type { SessionRow } from '../../../db/schema/index.ts'
import { diffForHumans, laravelDate } from '../../../lib/laravel.ts'
import { parseUserAgent } from '../../../lib/user-agent.ts'
import type { BrowserSessionResponse } from './browser-sessions.schemas.ts'

/** Jetstream's session entry: device, address, whether it is this one, and when it was last used. */
export function presentBrowserSession(
  row: SessionRow,
  currentSessionId: string | undefined,
  now: Date,
): BrowserSessionResponse {
  const lastActive = new Date(row.lastActivity * 1000)
  return {
    agent: parseUserAgent(row.userAgent),
    ip_address: row.ipAddress,
    is_current_device: row.id === currentSessionId,
    last_active: diffForHumans(lastActive, now),
    last_active_at: laravelDate(lastActive),
  }
}
