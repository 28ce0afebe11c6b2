import type { RememberTokenRow, SessionRow } from '../../../db/schema/index.ts'
import type { Clock } from '../../../lib/clock.ts'
import type { RememberTokenStore } from '../../../lib/sessions/remember-token-store.ts'
import type { SessionStore } from '../../../lib/sessions/session-store.ts'
import { presentBrowserSession, presentRememberedDevice } from './browser-sessions.presenters.ts'
import type { BrowserSessionResponse } from './browser-sessions.schemas.ts'

/** An entry of the sessions list: a live session, or a remembered device whose session has ended. */
export type BrowserEntry = { session: SessionRow } | { device: RememberTokenRow }

export function createBrowserSessionsService({
  sessions,
  remember,
  clock,
}: {
  sessions: Pick<SessionStore, 'listForUser'>
  remember: Pick<RememberTokenStore, 'listForUser'>
  clock: Clock
}) {
  return {
    /**
     * The user's live sessions and the remembered devices none of them belongs to (they sign in
     * again on their next request), the most recently active first, as the API shows them
     * (`currentSessionId`: the session asking, marked as this device).
     */
    async list(userId: number, currentSessionId: string | undefined): Promise<BrowserSessionResponse[]> {
      const [rows, devices] = await Promise.all([sessions.listForUser(userId), remember.listForUser(userId)])
      const withSession = new Set(rows.map((row) => row.rememberTokenId))
      const entries = [
        ...rows.map((session) => ({ at: session.lastActivity, entry: { session } })),
        ...devices
          .filter((device) => !withSession.has(device.id))
          .map((device) => ({ at: device.lastUsedAt, entry: { device } })),
      ]
      const now = clock.now()
      return entries
        .sort((a, b) => b.at - a.at)
        .map(({ entry }) =>
          'session' in entry
            ? presentBrowserSession(entry.session, currentSessionId, now)
            : presentRememberedDevice(entry.device, now),
        )
    },
  }
}
