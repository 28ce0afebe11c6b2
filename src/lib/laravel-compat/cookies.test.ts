import { describe, expect, it } from 'vitest'
import { cookieValuePrefix, encryptLaravelCookie, readLaravelCookie } from './cookies.ts'
import { encryptLaravel } from './encrypter.ts'
import { laravelFixtures as fixtures } from './fixtures/laravel-fixtures.ts'

const { current, previous } = fixtures.keys
const keys = [current, previous]
const fields = (payload: string) => JSON.parse(Buffer.from(payload, 'base64').toString('utf8'))

describe('readLaravelCookie', () => {
  it.each(fixtures.cookies.map((c) => [`${c.name} (${c.cipher}, ${c.key} key)`, c] as const))(
    'opens the cookie Laravel sent: %s',
    (_, cookie) => {
      expect(readLaravelCookie(cookie.name, cookie.cookie, keys)).toBe(cookie.value)
      // As it stands in the Cookie header, percent-encoded.
      expect(readLaravelCookie(cookie.name, cookie.header, keys)).toBe(cookie.value)
    },
  )

  it('refuses a cookie under another name: the prefix binds the value to its name', () => {
    const [session, xsrf] = fixtures.cookies
    expect(readLaravelCookie('XSRF-TOKEN', session?.cookie ?? '', keys)).toBeUndefined()
    expect(readLaravelCookie('laravel_session', xsrf?.cookie ?? '', keys)).toBeUndefined()
  })

  it('refuses a cookie no key opens, a tampered one, and one that is no payload', () => {
    const [session] = fixtures.cookies
    const value = session?.cookie ?? ''
    expect(readLaravelCookie('laravel_session', value, [previous])).toBeUndefined()
    const json = fields(value)
    json.mac = `${json.mac.slice(0, -1)}${json.mac.endsWith('0') ? '1' : '0'}`
    const tampered = Buffer.from(JSON.stringify(json)).toString('base64')
    expect(readLaravelCookie('laravel_session', tampered, keys)).toBeUndefined()
    expect(readLaravelCookie('laravel_session', 'plain-session-id', keys)).toBeUndefined()
    expect(readLaravelCookie('laravel_session', '%E0%A4%A', keys)).toBeUndefined()
  })

  it('refuses a value encrypted without its prefix, as Laravel before the prefix wrote them', () => {
    const unprefixed = encryptLaravel('Ab3Cd4Ef5Gh6Ij7Kl8Mn9Op0Qr1St2Uv3Wx4Yz5A', current)
    expect(readLaravelCookie('laravel_session', unprefixed, keys)).toBeUndefined()
  })

  it('fails loudly on a misconfigured key rather than reading every cookie as absent', () => {
    const [session] = fixtures.cookies
    expect(() => readLaravelCookie('laravel_session', session?.cookie ?? '', ['not-a-key'])).toThrow(
      RangeError,
    )
  })
})

describe('encryptLaravelCookie and cookieValuePrefix', () => {
  it.each(fixtures.cookies.map((c) => [`${c.name} (${c.cipher}, ${c.key} key)`, c] as const))(
    'write the cookie as Laravel did, given its iv: %s',
    (_, cookie) => {
      const mode = cookie.cipher.endsWith('GCM') ? 'gcm' : 'cbc'
      const iv = Buffer.from(fields(cookie.cookie).iv, 'base64')
      expect(encryptLaravelCookie(cookie.name, cookie.value, fixtures.keys[cookie.key], { mode, iv })).toBe(
        cookie.cookie,
      )
    },
  )

  it('is the hex HMAC-SHA1 of the name and v2, then a bar', () => {
    expect(cookieValuePrefix('laravel_session', 'a'.repeat(32))).toMatch(/^[0-9a-f]{40}\|$/)
    expect(cookieValuePrefix('laravel_session', current)).not.toBe(
      cookieValuePrefix('laravel_session', previous),
    )
  })
})
