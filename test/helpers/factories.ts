import { randomBytes } from 'node:crypto'
import { hash as argon2Hash } from '@node-rs/argon2'
import { eq } from 'drizzle-orm'
import type { Db } from '../../src/db/client.ts'
import { type UserRow, users } from '../../src/db/schema/index.ts'
import { systemClock } from '../../src/lib/clock.ts'
import { createEventBus } from '../../src/lib/events.ts'
import { ARGON2ID, hashPassword } from '../../src/lib/passwords.ts'
import { createLedgerService } from '../../src/modules/credits/ledger.service.ts'
import { createUsersService } from '../../src/modules/users/users.service.ts'
import type { TestApp } from './build-test-app.ts'
import { TestClient } from './client.ts'

export interface UserOverrides {
  name?: string
  email?: string
  password?: string
  isAdmin?: boolean
  verified?: boolean
  blocked?: boolean
  /** Credits granted through the ledger (an admin adjustment), e.g. for the metered AI features. */
  credits?: number | string
  /** The password hashed at the app's argon2id cost (`hashPassword`), for tests of how long sign-in takes. */
  appCost?: boolean
}

export const uniqueEmail = (prefix = 'user') => `${prefix}-${randomBytes(5).toString('hex')}@example.com`

// The suite makes thousands of users and signs most of them in, and an argon2id hash at the app's
// cost takes tens of milliseconds of CPU to make and as long to check. Users made here carry one
// made at the lowest cost (1 MiB, 1 pass), once per password per test process: sign-in checks it
// through the same code as any argon2id hash, in well under a millisecond. A test of what the
// app's cost costs (the login timing) asks for `appCost`.
const cheapHashes = new Map<string, Promise<string>>()
const cheapHashOf = (password: string) => {
  let hash = cheapHashes.get(password)
  if (!hash) {
    hash = argon2Hash(password, { algorithm: ARGON2ID, memoryCost: 1024, timeCost: 1, parallelism: 1 })
    cheapHashes.set(password, hash)
  }
  return hash
}

/** A user in the database (through the same service the app uses) with a known password. */
export async function createUser(
  db: Db,
  overrides: UserOverrides = {},
): Promise<{ user: UserRow; password: string }> {
  const password = overrides.password ?? 'correct horse battery'
  let user = await createUsersService({ db, clock: systemClock, events: createEventBus() }).create({
    name: overrides.name ?? 'Test Trader',
    email: overrides.email ?? uniqueEmail(),
    passwordHash: overrides.appCost ? await hashPassword(password) : await cheapHashOf(password),
    isAdmin: overrides.isAdmin,
    verified: overrides.verified,
  })
  if (overrides.blocked) {
    ;[user] = (await db
      .update(users)
      .set({ blockedAt: new Date() })
      .where(eq(users.id, user.id))
      .returning()) as [UserRow]
  }
  if (overrides.credits !== undefined) await grantCredits(db, user.id, overrides.credits)
  return { user, password }
}

/** A client signed in as a new (or given) user through POST /api/login, as the app signs in. */
export async function signedInClient(
  t: TestApp,
  overrides: UserOverrides = {},
): Promise<{ client: TestClient; user: UserRow; password: string }> {
  const { user, password } = await createUser(t.database.db, overrides)
  const client = new TestClient(t.baseUrl)
  const res = await client.post('/api/login', { email: user.email, password })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`)
  return { client, user, password }
}

/**
 * A signed-in, verified admin whose session has just confirmed the password, as the admin screens
 * need before an account's block, deletion, email, password or role changes (423 otherwise).
 */
export async function signedInAdmin(
  t: TestApp,
): Promise<{ client: TestClient; user: UserRow; password: string }> {
  const admin = await signedInClient(t, { isAdmin: true, verified: true })
  await confirmPassword(admin.client, admin.password)
  return admin
}

/** The three credit figures of GET /api/user, as the app reads them. */
export async function creditFigures(client: TestClient) {
  const { data } = await client.get('/api/user')
  return {
    available: data.available_credits,
    held: data.held_credits,
    spendable: data.credits_available_for_automation,
  }
}

/** Credits `amount` (a decimal string or number) to the user through the ledger, as an admin adjustment would. */
export async function grantCredits(db: Db, userId: number, amount: string | number): Promise<void> {
  const ledger = createLedgerService({ db, clock: systemClock })
  await ledger.withLockedAccount(userId, (tx) =>
    ledger.append(tx, { userId, amount: String(amount), kind: 'admin_adjustment', reason: 'test grant' }),
  )
}

/**
 * Confirms the password on the client's session (POST /api/user/confirm-password), as the app does
 * before a sensitive action (2FA settings and codes, an email change) that answered 423.
 */
export async function confirmPassword(client: TestClient, password: string): Promise<void> {
  const res = await client.post('/api/user/confirm-password', { password })
  if (res.status !== 201) throw new Error(`password confirmation failed: ${res.status} ${res.text}`)
}
