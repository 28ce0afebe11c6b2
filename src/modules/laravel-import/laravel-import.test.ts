import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { asc, eq } from 'drizzle-orm'
import { Secret, TOTP } from 'otpauth'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TEST_APP_KEY } from '../../../test/helpers/build-test-app.ts'
import { TestClient } from '../../../test/helpers/client.ts'
import { createUser } from '../../../test/helpers/factories.ts'
import {
  type LaravelFixture,
  newFixtureKeys,
  PNG,
  seedLaravelOriginal,
} from '../../../test/helpers/laravel-fixture.ts'
import { createLaravelOriginal, type LaravelOriginal } from '../../../test/helpers/laravel-original.ts'
import type { LaravelDialect } from '../../../test/helpers/laravel-schema.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { laravelImportedUsers, sessions, users } from '../../db/schema/index.ts'
import { unixSeconds } from '../../lib/clock.ts'
import { encryptLaravelCookie } from '../../lib/laravel-compat/cookies.ts'
import { laravelKeys } from '../../lib/laravel-compat/keys.ts'
import { rememberCookieName } from '../../lib/laravel-compat/session-guard.ts'
import { hashSessionToken } from '../../lib/sessions/session-store.ts'
import type { ImportNote, ImportSummary } from './import-summary.ts'
import { legacySessionToken } from './legacy-session-token.ts'
import { createPhotoCopier } from './photo-copy.ts'
import { openLaravelSource } from './sources/open-source.ts'

// The import through the real thing: a Laravel-shaped database in each engine the original may run
// on, rows encrypted as Laravel's encrypter does (CBC with its MAC, GCM; APP_KEY and a previous
// key), the import run on this service's database, then the users signing in over HTTP.

const DIALECTS: LaravelDialect[] = ['sqlite', 'postgres', 'mariadb']
const APP_URL = 'https://api.trading.test'

describe.each(DIALECTS)('import:laravel from %s', (dialect) => {
  // The original's keys are known to the app too, so its browsers' cookies are taken (the cutover window).
  const keys = newFixtureKeys()
  const t = appUnderTest(() => ({
    env: {
      APP_URL,
      LARAVEL_APP_KEY: keys.current,
      LARAVEL_PREVIOUS_KEYS: keys.previous,
      LARAVEL_COOKIES_UNTIL: '2099-01-01',
    },
  }))
  let original: LaravelOriginal | undefined
  let fixture: LaravelFixture
  const photosDir = mkdtempSync(join(tmpdir(), 'laravel-public-'))
  const runs: Record<'dryRun' | 'first' | 'second', { summary: ImportSummary; notes: ImportNote[] }> =
    {} as never
  const snapshots: Record<'before' | 'afterDryRun' | 'afterFirst' | 'afterSecond', unknown> = {} as never

  /** Every row the import may write, in a fixed order, and the stored photo files. */
  async function snapshot() {
    const { db } = t.database
    return {
      users: await db.select().from(users).orderBy(asc(users.id)),
      links: await db.select().from(laravelImportedUsers).orderBy(asc(laravelImportedUsers.oldId)),
      sessions: await db.select().from(sessions).orderBy(asc(sessions.id)),
      photos: existsSync(join(t.config.dataDir, 'profile-photos'))
        ? readdirSync(join(t.config.dataDir, 'profile-photos')).sort()
        : [],
    }
  }

  async function runImport(dryRun: boolean) {
    const source = await openLaravelSource((original as LaravelOriginal).url)
    const notes: ImportNote[] = []
    try {
      const summary = await t.app.services.laravelImport.run({
        source,
        keys: laravelKeys(fixture.keys.current, fixture.keys.previous),
        photos: createPhotoCopier({ dir: photosDir, storage: t.app.storage }),
        sessions: { serialization: 'php' },
        dryRun,
        batchSize: 3,
        onNote: (note) => notes.push(note),
      })
      return { summary, notes }
    } finally {
      await source.close()
    }
  }

  beforeAll(async () => {
    original = await createLaravelOriginal(dialect)
    fixture = await seedLaravelOriginal(original, photosDir, unixSeconds(t.clock), keys)
    await createUser(t.database.db, { email: fixture.takenEmail })
    snapshots.before = await snapshot()
    runs.dryRun = await runImport(true)
    snapshots.afterDryRun = await snapshot()
    runs.first = await runImport(false)
    snapshots.afterFirst = await snapshot()
    runs.second = await runImport(false)
    snapshots.afterSecond = await snapshot()
  }, 120_000)

  afterAll(async () => {
    await original?.destroy()
    rmSync(photosDir, { recursive: true, force: true })
  })

  const expectedSkips = () => ({
    'duplicate-email': fixture.hasCaseDuplicate ? 2 : 1,
    'two-factor-key': 1,
    'invalid-email': 1,
  })

  it('imports the users it can, and reports the others by reason', () => {
    expect(runs.first.summary).toEqual({
      dryRun: false,
      users: {
        total: fixture.counts.users,
        imported: 6,
        twoFactor: 2,
        twoFactorUnconfirmed: 1,
        alreadyImported: 0,
        skipped: expectedSkips(),
        withoutPhoto: { 'photo-missing': 1, 'photo-not-an-image': 1 },
      },
      sessions: {
        live: fixture.counts.liveSessions,
        expired: fixture.counts.expiredSessions,
        imported: 2,
        alreadyImported: 0,
        skipped: { guest: 1, 'user-not-imported': 1 },
      },
    })
    const { users: u } = fixture
    expect(runs.first.notes).toEqual(
      expect.arrayContaining([
        { kind: 'user-skipped', oldId: u.dave.id, reason: 'duplicate-email' },
        { kind: 'user-skipped', oldId: u.erin.id, reason: 'two-factor-key' },
        { kind: 'user-skipped', oldId: u.grace.id, reason: 'invalid-email' },
        { kind: 'user-without-photo', oldId: u.frank.id, note: 'photo-missing' },
        { kind: 'user-without-photo', oldId: u.judy.id, note: 'photo-not-an-image' },
        { kind: 'session-skipped', oldUserId: u.erin.id, reason: 'user-not-imported' },
      ]),
    )
    if (fixture.hasCaseDuplicate) {
      expect(runs.first.notes).toContainEqual({
        kind: 'user-skipped',
        oldId: u.ivan.id,
        reason: 'duplicate-email',
      })
    }
    // Guests are counted, not listed; nothing secret is in a note.
    expect(JSON.stringify(runs.first.notes)).not.toContain(fixture.sessions.bob.id)
  })

  it('--dry-run reports the same and writes nothing', () => {
    expect(snapshots.afterDryRun).toEqual(snapshots.before)
    expect(runs.dryRun.summary).toEqual({ ...runs.first.summary, dryRun: true })
    expect(runs.dryRun.notes).toEqual(runs.first.notes)
  })

  it('a second run changes nothing: the same rows, everyone already imported', () => {
    expect(snapshots.afterSecond).toEqual(snapshots.afterFirst)
    expect(runs.second.summary.users).toMatchObject({
      imported: 0,
      alreadyImported: 6,
      skipped: expectedSkips(),
    })
    expect(runs.second.summary.sessions).toMatchObject({ imported: 0, alreadyImported: 2 })
  })

  it('keeps name, email (lower-cased), verification, admin flag, creation time and the old bcrypt hash', async () => {
    const { alice } = fixture.users
    const [link] = await t.database.db
      .select()
      .from(laravelImportedUsers)
      .where(eq(laravelImportedUsers.oldId, alice.id))
    const [row] = await t.database.db
      .select()
      .from(users)
      .where(eq(users.id, link?.userId ?? 0))
    expect(row).toMatchObject({
      name: 'Alice Admin',
      email: 'alice@example.com',
      isAdmin: true,
      emailVerifiedAt: new Date('2024-03-05T00:00:00Z'),
      createdAt: new Date('2024-03-04T05:06:07Z'),
    })
    expect(row?.password).toMatch(/^\$2y\$04\$/)
    expect(link).toMatchObject({
      legacyPasswordHash: row?.password,
      rememberTokenDigest: createHash('sha256')
        .update(alice.rememberToken ?? '')
        .digest('hex'),
    })
  })

  it('signs in with the old password (then rehashed), and shows the copied photo', async () => {
    const { alice } = fixture.users
    const client = new TestClient(t.baseUrl)
    const login = await client.post('/api/login', { email: alice.email, password: alice.password })
    expect(login.status).toBe(200)
    expect(login.data).toEqual({ two_factor: false })
    const me = await client.get('/api/user')
    expect(me.data).toMatchObject({
      name: 'Alice Admin',
      email: 'alice@example.com',
      is_admin: true,
      email_verified_at: '2024-03-05T00:00:00.000000Z',
      created_at: '2024-03-04T05:06:07.000000Z',
      two_factor_enabled: false,
    })
    const [stored] = await t.database.db.select().from(users).where(eq(users.id, me.data.id))
    expect(stored?.password).toMatch(/^\$argon2id\$/)

    const url: string = me.data.profile_photo_url
    expect(url).toMatch(/^https:\/\/api\.trading\.test\/storage\/profile-photos\/[A-Za-z0-9_-]{40}\.png$/)
    const photo = await fetch(`${t.baseUrl}${new URL(url).pathname}`)
    expect(photo.status).toBe(200)
    expect(photo.headers.get('content-type')).toBe('image/png')
    expect(Buffer.from(await photo.arrayBuffer())).toEqual(PNG)
  })

  it('imports a user whose photo is missing or not an image, without it', async () => {
    for (const user of [fixture.users.frank, fixture.users.judy]) {
      const client = new TestClient(t.baseUrl)
      expect((await client.post('/api/login', { email: user.email, password: user.password })).status).toBe(
        200,
      )
      expect((await client.get('/api/user')).data.profile_photo_url).toBeNull()
    }
  })

  /** A browser that typed the right password and is asked for the second factor. */
  async function pendingLogin(email: string, password: string): Promise<TestClient> {
    const client = new TestClient(t.baseUrl)
    const res = await client.post('/api/login', { email, password })
    expect(res.data).toEqual({ two_factor: true })
    return client
  }
  const totp = (secret: string) =>
    TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: t.clock.nowMs() })

  it('passes two-factor with a code from the original secret (CBC under APP_KEY, GCM under a previous key)', async () => {
    for (const user of [fixture.users.bob, fixture.users.carol]) {
      const client = await pendingLogin(user.email, user.password)
      const res = await client.post('/api/two-factor-challenge', { code: totp(user.secret as string) })
      expect(res.status).toBe(200)
      expect((await client.get('/api/user')).data).toMatchObject({
        email: user.email.toLowerCase(),
        two_factor_enabled: true,
      })
    }
  })

  it('passes two-factor with an original recovery code, once', async () => {
    const { carol } = fixture.users
    const [code] = carol.recoveryCodes as [string]
    const first = await pendingLogin(carol.email, carol.password)
    expect((await first.post('/api/two-factor-challenge', { recovery_code: code })).status).toBe(200)
    const again = await pendingLogin(carol.email, carol.password)
    expect((await again.post('/api/two-factor-challenge', { recovery_code: code })).status).toBe(401)
    const other = (carol.recoveryCodes as string[])[1] as string
    expect((await again.post('/api/two-factor-challenge', { recovery_code: other })).status).toBe(200)
  })

  it('imports a two-factor setup never confirmed as Fortify treats it: not asked at sign-in', async () => {
    const { heidi } = fixture.users
    const client = new TestClient(t.baseUrl)
    const login = await client.post('/api/login', { email: heidi.email, password: heidi.password })
    expect(login.data).toEqual({ two_factor: false })
    expect((await client.get('/api/user')).data.two_factor_enabled).toBe(false)
  })

  it('does not import a user whose email this service has, nor one whose secret no key opens', async () => {
    for (const user of [fixture.users.dave, fixture.users.erin]) {
      const res = await new TestClient(t.baseUrl).post('/api/login', {
        email: user.email,
        password: user.password,
      })
      expect(res.status).toBe(422)
    }
  })

  it('imports live signed-in sessions under the token derived from the old id, with their CSRF token', async () => {
    const { bob, alice } = fixture.sessions
    const [row] = await t.database.db
      .select()
      .from(sessions)
      .where(eq(sessions.id, hashSessionToken(legacySessionToken(bob.id, TEST_APP_KEY))))
    expect(row).toMatchObject({
      payload: { csrfToken: bob.token },
      lastActivity: bob.lastActivity,
      ipAddress: bob.ip,
      userAgent: bob.userAgent,
      rememberTokenId: null,
    })
    const client = new TestClient(t.baseUrl)
    client.cookies.set('app_session', legacySessionToken(bob.id, TEST_APP_KEY))
    const me = await client.get('/api/user')
    expect(me.status).toBe(200)
    expect(me.data.email).toBe(fixture.users.bob.email)

    // Alice's session names her only in its payload (user_id null), as SessionGuard keeps it.
    const aliceClient = new TestClient(t.baseUrl)
    aliceClient.cookies.set('app_session', legacySessionToken(alice.id, TEST_APP_KEY))
    expect((await aliceClient.get('/api/user')).data.email).toBe('alice@example.com')
  })
  it("keeps the original's browsers signed in: its session cookie, XSRF-TOKEN and remember cookie", async () => {
    const { bob } = fixture.sessions
    const oldCookie = (name: string, value: string) =>
      encodeURIComponent(encryptLaravelCookie(name, value, keys.current))
    const browser = new TestClient(t.baseUrl)
    browser.cookies.set('laravel_session', oldCookie('laravel_session', bob.id))
    browser.cookies.set('XSRF-TOKEN', oldCookie('XSRF-TOKEN', bob.token))
    // The SPA's first write after the switch still echoes the original's XSRF-TOKEN.
    const write = await browser.post('/api/user/settings', { theme: 'dark' })
    expect(write.status).toBe(200)
    const me = await browser.get('/api/user')
    expect(me.status).toBe(200)
    expect(me.data.email).toBe(fixture.users.bob.email)
    expect(browser.cookies.get('app_session')).toBe(legacySessionToken(bob.id, TEST_APP_KEY))

    // Alice's remember-me cookie (`id|token|bcrypt hash`) signs her in with a remember cookie of ours.
    const [link] = await t.database.db
      .select()
      .from(laravelImportedUsers)
      .where(eq(laravelImportedUsers.oldId, fixture.users.alice.id))
    const remembered = new TestClient(t.baseUrl)
    const value = `${fixture.users.alice.id}|${fixture.users.alice.rememberToken}|${link?.legacyPasswordHash}`
    remembered.cookies.set(rememberCookieName(), oldCookie(rememberCookieName(), value))
    const alice = await remembered.get('/api/user')
    expect(alice.status).toBe(200)
    expect(alice.data.email).toBe('alice@example.com')
    expect(remembered.cookies.has('app_remember')).toBe(true)
  })
})
