import { eq } from 'drizzle-orm'
import { sessions } from '../../src/db/schema/index.ts'
import { hashSessionToken } from '../../src/lib/sessions/session-store.ts'
import type { TestApp } from './build-test-app.ts'
import type { TestClient } from './client.ts'

/**
 * The client's session's own CSRF token, as stored: what a server-rendered form would carry in
 * `_token`. No cookie holds it (the XSRF-TOKEN cookie holds it sealed, for X-XSRF-TOKEN only).
 */
export async function sessionCsrfToken(t: TestApp, client: TestClient): Promise<string> {
  const id = hashSessionToken(client.cookies.get('app_session') ?? '')
  const [row] = await t.database.db.select().from(sessions).where(eq(sessions.id, id))
  if (!row) throw new Error('the client has no session')
  return row.payload.csrfToken
}
