import type { RememberTokenRow, SessionRow } from '../../../db/schema/index.ts'
import type { RememberTokensService } from '../../sessions/remember-tokens.service.ts'
import type { SessionsService } from '../../sessions/sessions.service.ts'

/** An entry of the sessions list: a live session, or a remembered device whose session has ended. */
export type BrowserEntry = { session: SessionRow } | { device: RememberTokenRow }

export function createBrowserSessionsService({
  sessions,
  remember,
}: {
  sessions: Pick<SessionsService, 'listForUser'>
  remember: Pick<RememberTokensService, 'listForUser'>
}) {
  return {
    /**
     * The user's live sessions and the remembered devices none of them belongs to (they sign in
     * again on their next request), the most recently active first.
     */
    async list(userId: number): Promise<BrowserEntry[]> {
      const [rows, devices] = await Promise.all([sessions.listForUser(userId), remember.listForUser(userId)])
      const withSession = new Set(rows.map((row) => row.rememberTokenId))
      const entries = [
        ...rows.map((session) => ({ at: session.lastActivity, entry: { session } })),
        ...devices
          .filter((device) => !withSession.has(device.id))
          .map((device) => ({ at: device.lastUsedAt, entry: { device } })),
      ]
      return entries.sort((a, b) => b.at - a.at).map(({ entry }) => entry)
    },
  }
}
