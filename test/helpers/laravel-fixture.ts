import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { hashSync } from '@node-rs/bcrypt'
import { Secret } from 'otpauth'
import { sessionLoginKey } from '../../src/lib/laravel-compat/session-guard.ts'
import type { LaravelOriginal } from './laravel-original.ts'
import {
  type LaravelDialect,
  laravelEncrypt,
  laravelSessionPayload,
  laravelTimestamp,
  type Row,
} from './laravel-schema.ts'

// One Laravel deployment's worth of users and sessions, each case the import must handle, written
// as Laravel, Fortify and Jetstream write them.

/** A key as `php artisan key:generate` writes it. */
export const newLaravelKey = () => `base64:${randomBytes(32).toString('base64')}`

/** A real 1x1 PNG. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)

const randomText = (length: number) =>
  randomBytes(length)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, 'x')
    .slice(0, length)
/** Fortify's RecoveryCode::generate: Str::random(10) . '-' . Str::random(10). */
const recoveryCode = () => `${randomText(10)}-${randomText(10)}`
/** Laravel's `$2y$` bcrypt (cost 4: the tests sign in often). */
const bcrypt = (password: string) => hashSync(password, { cost: 4 }).replace(/^\$2b\$/, '$2y$')

/** The original's APP_KEY, one of its APP_PREVIOUS_KEYS, and a key that opens nothing; new each time. */
export const newFixtureKeys = (): LaravelFixture['keys'] => ({
  current: newLaravelKey(),
  previous: newLaravelKey(),
  stranger: newLaravelKey(),
})

export interface FixtureUser {
  id: number
  name: string
  email: string
  password: string
  /** The base32 secret the user's authenticator app holds. */
  secret?: string
  recoveryCodes?: string[]
  rememberToken?: string
}

export interface LaravelFixture {
  /** The original's APP_KEY, one of its APP_PREVIOUS_KEYS, and a key that opens nothing. */
  keys: { current: string; previous: string; stranger: string }
  users: Record<
    'alice' | 'bob' | 'carol' | 'dave' | 'erin' | 'frank' | 'grace' | 'heidi' | 'ivan' | 'judy',
    FixtureUser
  >
  /** Whether ivan (alice's email in other case) is in the source: not in MySQL, whose index ignores case. */
  hasCaseDuplicate: boolean
  /** The email one of this service's users holds before the import (dave's, in another case). */
  takenEmail: string
  alicePhoto: string
  sessions: {
    /** Bob's live session, found by its user_id and the payload's login key. */
    bob: { id: string; token: string; lastActivity: number; ip: string; userAgent: string }
    /** Alice's live session: its user only in the payload (user_id null). */
    alice: { id: string; token: string }
  }
  /** Users in the source, live sessions, expired sessions. */
  counts: { users: number; liveSessions: number; expiredSessions: number }
}

/**
 * Writes the fixture into `original` and the photos into `photosDir` (the old storage/app/public):
 * - alice: admin, verified, a photo, a remember token; bob: two-factor confirmed (CBC, APP_KEY);
 * - carol: two-factor confirmed (GCM, a previous key); dave: an email this service already has;
 * - erin: a secret no key opens; frank: a photo file that is missing; grace: an invalid email;
 * - heidi: two-factor set up, never confirmed; ivan: alice's email in upper case (not in MySQL);
 * - judy: a "photo" that is not an image.
 * Sessions (relative to `now`, unix seconds): bob's and alice's live, a guest's, erin's, alice's expired one.
 */
export async function seedLaravelOriginal(
  original: LaravelOriginal,
  photosDir: string,
  now: number,
  keys: LaravelFixture['keys'] = newFixtureKeys(),
): Promise<LaravelFixture> {
  const secret = () => new Secret({ size: 10 }).base32
  const codes = () => Array.from({ length: 8 }, recoveryCode)
  const dialect: LaravelDialect = original.dialect
  const hasCaseDuplicate = dialect !== 'mariadb'
  const users: LaravelFixture['users'] = {
    alice: {
      id: 1,
      name: 'Alice Admin',
      email: 'alice@example.com',
      password: 'alice password 1',
      rememberToken: randomText(60),
    },
    bob: {
      id: 2,
      name: 'Bob',
      email: 'bob@example.com',
      password: 'bob password 22',
      secret: secret(),
      recoveryCodes: codes(),
    },
    carol: {
      id: 3,
      name: 'Carol',
      email: 'Carol@Example.com',
      password: 'carol password 3',
      secret: secret(),
      recoveryCodes: codes(),
    },
    dave: { id: 4, name: 'Dave', email: 'Dave.Taken@Example.com', password: 'dave password 44' },
    erin: {
      id: 5,
      name: 'Erin',
      email: 'erin@example.com',
      password: 'erin password 55',
      secret: secret(),
      recoveryCodes: codes(),
    },
    frank: { id: 6, name: 'Frank', email: 'frank@example.com', password: 'frank password 6' },
    grace: { id: 7, name: 'Grace', email: 'grace at example', password: 'grace password 7' },
    heidi: {
      id: 8,
      name: 'Heidi',
      email: 'heidi@example.com',
      password: 'heidi password 8',
      secret: secret(),
      recoveryCodes: codes(),
    },
    ivan: { id: 9, name: 'Ivan', email: 'ALICE@example.com', password: 'ivan password 99' },
    judy: { id: 10, name: 'Judy', email: 'judy@example.com', password: 'judy password 10' },
  }
  const created = laravelTimestamp(new Date('2024-03-04T05:06:07Z'))
  const alicePhoto = `profile-photos/${randomText(40)}.png`
  mkdirSync(join(photosDir, 'profile-photos'), { recursive: true })
  writeFileSync(join(photosDir, alicePhoto), PNG)
  writeFileSync(join(photosDir, 'profile-photos/judy.png'), 'not an image at all')

  const row = (user: FixtureUser, extra: Row = {}): Row => ({
    id: user.id,
    name: user.name,
    email: user.email,
    email_verified_at: null,
    password: bcrypt(user.password),
    remember_token: user.rememberToken ?? null,
    created_at: created,
    updated_at: created,
    two_factor_secret: null,
    two_factor_recovery_codes: null,
    two_factor_confirmed_at: null,
    profile_photo_path: null,
    is_admin: false,
    ...extra,
  })
  // Fortify: encrypt($secret) and encrypt(json_encode($codes)).
  const twoFactor = (user: FixtureUser, key: string, mode: 'cbc' | 'gcm', confirmed: string | null): Row => ({
    two_factor_secret: laravelEncrypt(user.secret as string, key, mode),
    two_factor_recovery_codes: laravelEncrypt(JSON.stringify(user.recoveryCodes), key, mode),
    two_factor_confirmed_at: confirmed,
  })
  const rows: Row[] = [
    row(users.alice, {
      email_verified_at: laravelTimestamp(new Date('2024-03-05T00:00:00Z')),
      is_admin: true,
      profile_photo_path: alicePhoto,
    }),
    row(users.bob, twoFactor(users.bob, keys.current, 'cbc', created)),
    row(users.carol, twoFactor(users.carol, keys.previous, 'gcm', created)),
    row(users.dave),
    row(users.erin, twoFactor(users.erin, keys.stranger, 'cbc', created)),
    row(users.frank, { profile_photo_path: 'profile-photos/missing.png' }),
    row(users.grace),
    row(users.heidi, twoFactor(users.heidi, keys.current, 'cbc', null)),
    ...(hasCaseDuplicate ? [row(users.ivan)] : []),
    row(users.judy, { profile_photo_path: 'profile-photos/judy.png' }),
  ]
  await original.insert('users', rows)

  const loginKey = sessionLoginKey()
  const bob = {
    id: randomText(40),
    token: randomText(40),
    lastActivity: now - 600,
    ip: '203.0.113.7',
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0',
  }
  const alice = { id: randomText(40), token: randomText(40) }
  const session = (
    id: string,
    userId: number | null,
    lastActivity: number,
    attributes: Record<string, unknown>,
  ): Row => ({
    id,
    user_id: userId,
    ip_address: '198.51.100.2',
    user_agent: 'Mozilla/5.0',
    payload: laravelSessionPayload({
      _previous: { url: 'https://app.example.com/dashboard' },
      _flash: { old: [], new: [] },
      ...(attributes as Record<string, string | number>),
    }),
    last_activity: lastActivity,
  })
  await original.insert('sessions', [
    {
      ...session(bob.id, users.bob.id, bob.lastActivity, { _token: bob.token, [loginKey]: users.bob.id }),
      ip_address: bob.ip,
      user_agent: bob.userAgent,
    },
    session(alice.id, null, now - 60, { _token: alice.token, [loginKey]: users.alice.id }),
    session(randomText(40), null, now - 30, { _token: randomText(40) }),
    session(randomText(40), users.erin.id, now - 120, { _token: randomText(40), [loginKey]: users.erin.id }),
    session(randomText(40), users.alice.id, now - 3 * 3600, {
      _token: randomText(40),
      [loginKey]: users.alice.id,
    }),
  ])
  return {
    keys,
    users,
    hasCaseDuplicate,
    takenEmail: 'dave.taken@example.com',
    alicePhoto,
    sessions: { bob, alice },
    counts: { users: rows.length, liveSessions: 4, expiredSessions: 1 },
  }
}
