import { describe, expect, it } from 'vitest'
import { readLaravelCookie } from './cookies.ts'
import { laravelFixtures as fixtures } from './fixtures/laravel-fixtures.ts'
import {
  parseRememberCookie,
  passwordHashMatches,
  rememberCookieName,
  sessionLoginKey,
  sessionPasswordHashKey,
} from './session-guard.ts'

const { current, previous } = fixtures.keys

describe("SessionGuard's names", () => {
  it("carry sha1('Illuminate\\Auth\\SessionGuard'), as PHP computed it", () => {
    const remember = fixtures.cookies.find((c) => c.name.startsWith('remember_'))
    expect(rememberCookieName()).toBe(remember?.name)
    expect(rememberCookieName()).toBe('remember_web_59ba36addc2b2f9401580f014c7f58ea4e30989d')
    expect(sessionLoginKey()).toBe('login_web_59ba36addc2b2f9401580f014c7f58ea4e30989d')
    expect(rememberCookieName('admin')).toBe('remember_admin_59ba36addc2b2f9401580f014c7f58ea4e30989d')
    expect(sessionPasswordHashKey()).toBe('password_hash_web')
  })
})

describe('parseRememberCookie', () => {
  it.each(fixtures.recallers.map((r) => [JSON.stringify(r.value), r] as const))(
    "reads %s as Laravel's Recaller does",
    (_, recaller) => {
      const parsed = parseRememberCookie(recaller.value)
      if (!recaller.valid) expect(parsed).toBeUndefined()
      else expect(parsed).toEqual({ id: recaller.id, token: recaller.token, hash: recaller.hash })
    },
  )

  it('reads the remember cookies Laravel sent, with the MAC of the hash or the hash itself', () => {
    const [withMac, withHash] = fixtures.cookies
      .filter((c) => c.name === rememberCookieName())
      .map((c) => parseRememberCookie(readLaravelCookie(c.name, c.cookie, [current, previous]) ?? ''))
    expect(withMac).toEqual({ id: '42', token: fixtures.rememberToken, hash: fixtures.passwordMac })
    expect(withHash).toEqual({ id: '7', token: fixtures.rememberToken, hash: fixtures.passwordHash })
  })
})

describe('passwordHashMatches', () => {
  it("accepts Laravel 12.45's HMAC under the APP_KEY text and the older raw hash", () => {
    expect(passwordHashMatches(fixtures.passwordMac, fixtures.passwordHash, current)).toBe(true)
    expect(passwordHashMatches(fixtures.passwordHash, fixtures.passwordHash, current)).toBe(true)
  })

  it('refuses the hash of another password, a MAC under another key, and a truncated MAC', () => {
    const otherHash = fixtures.passwordHash.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'))
    expect(passwordHashMatches(fixtures.passwordMac, otherHash, current)).toBe(false)
    expect(passwordHashMatches(fixtures.passwordMac, fixtures.passwordHash, previous)).toBe(false)
    expect(passwordHashMatches(fixtures.passwordMac.slice(0, 40), fixtures.passwordHash, current)).toBe(false)
    expect(passwordHashMatches('', fixtures.passwordHash, current)).toBe(false)
  })
})
