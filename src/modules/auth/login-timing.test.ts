import { hashSync } from '@node-rs/bcrypt'
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { TestClient } from '../../../test/helpers/client.ts'
import { createUser, uniqueEmail } from '../../../test/helpers/factories.ts'
import { appUnderTest } from '../../../test/helpers/under-test.ts'
import { type UserRow, users } from '../../db/schema/index.ts'
import { observePasswordWork, type PasswordWork } from '../../lib/passwords.ts'

// Whether an email has an account must not show in how long a wrong password takes to refuse: an
// unknown email, an argon2id account and one imported from the Laravel original (bcrypt) do the
// same hashing. Checked twice: by counting the hashing work (exact), and by the clock (medians).

// Each login comes from its own address (X-Forwarded-For from a trusted peer), so the per-address
// and per-email throttles never answer in its place.
const t = appUnderTest({ env: { TRUSTED_PROXIES: '127.0.0.1' } })

let addresses = 0
const login = (email: string, password: string) => {
  addresses++
  const ip = `10.77.${(addresses >> 8) & 255}.${addresses & 255}`
  return new TestClient(t.baseUrl).post(
    '/api/login',
    { email, password },
    { headers: { 'x-forwarded-for': ip } },
  )
}

/** The password hashing one login did. */
async function workOf(email: string, password: string): Promise<{ status: number; work: PasswordWork[] }> {
  const work: PasswordWork[] = []
  const stop = observePasswordWork((done) => work.push(done))
  try {
    const res = await login(email, password)
    return { status: res.status, work }
  } finally {
    stop()
  }
}

/** The work as it costs time: decoy or real does not matter. */
const cost = (work: PasswordWork[]) =>
  work.map(({ kind, algorithm, cost }) =>
    cost === undefined ? { kind, algorithm } : { kind, algorithm, cost },
  )

/** A user whose password hash came from the Laravel original: bcrypt `$2y$` at `cost`. */
async function importedUser(bcryptCost: number): Promise<UserRow> {
  const { user } = await createUser(t.database.db)
  const hash = hashSync('from-laravel-1', { cost: bcryptCost }).replace(/^\$2b\$/, '$2y$')
  await t.database.db.update(users).set({ password: hash }).where(eq(users.id, user.id))
  return user
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

describe('POST /api/login with a wrong password', () => {
  it('hashes the same for an unknown email, an argon2id account and a bcrypt one imported from Laravel', async () => {
    const { user: modern } = await createUser(t.database.db)
    const argon2Only = [{ kind: 'verify', algorithm: 'argon2id' }]
    // No imported hash in the database: one argon2id check each (a decoy for the unknown email).
    for (const email of [uniqueEmail('nobody'), modern.email]) {
      const { status, work } = await workOf(email, 'wrong password')
      expect(status).toBe(422)
      expect(cost(work)).toEqual(argon2Only)
    }

    const imported = await importedUser(10)
    const seen = {
      unknown: await workOf(uniqueEmail('nobody'), 'wrong password'),
      modern: await workOf(modern.email, 'wrong password'),
      imported: await workOf(imported.email, 'wrong password'),
    }
    for (const { status, work } of Object.values(seen)) {
      expect(status).toBe(422)
      expect(cost(work)).toEqual([
        { kind: 'verify', algorithm: 'argon2id' },
        { kind: 'verify', algorithm: 'bcrypt', cost: 10 },
      ])
    }
    // Which of the two checks was the real one: [argon2id, bcrypt].
    expect(seen.unknown.work.map((work) => work.decoy)).toEqual([true, true])
    expect(seen.modern.work.map((work) => work.decoy)).toEqual([false, true])
    expect(seen.imported.work.map((work) => work.decoy)).toEqual([true, false])

    // The right password signs in and rehashes to argon2id; with no bcrypt hash left, no bcrypt decoy.
    expect((await login(imported.email, 'from-laravel-1')).status).toBe(200)
    for (const email of [uniqueEmail('nobody'), modern.email, imported.email]) {
      expect(cost((await workOf(email, 'wrong password')).work)).toEqual(argon2Only)
    }
  })

  it('takes about as long for each of the three (medians of 7 interleaved runs, within a factor of 2)', async () => {
    const { user: modern } = await createUser(t.database.db, { appCost: true })
    // Cost 11 (about 5 argon2id checks' worth): a bcrypt check that is not matched shows plainly.
    const imported = await importedUser(11)
    const emails = {
      unknown: () => uniqueEmail('nobody'),
      modern: () => modern.email,
      imported: () => imported.email,
    }
    // A first login makes the decoy hashes (once per process).
    expect((await login(uniqueEmail('warm'), 'wrong password')).status).toBe(422)
    const times: Record<string, number[]> = { unknown: [], modern: [], imported: [] }
    for (let round = 0; round < 7; round++) {
      for (const [name, email] of Object.entries(emails)) {
        const started = performance.now()
        const res = await login(email(), 'wrong password')
        times[name]?.push(performance.now() - started)
        expect(res.status).toBe(422)
      }
    }
    const medians = Object.values(times).map(median)
    expect(Math.max(...medians) / Math.min(...medians), JSON.stringify(medians)).toBeLessThan(2)
  })
})
