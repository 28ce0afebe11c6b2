import { describe, expect, it } from 'vitest'
import { encryptLaravel, LaravelDecryptError } from './encrypter.ts'
import { laravelFixtures as fixtures } from './fixtures/laravel-fixtures.ts'
import { serializePhp } from './php-serialize.ts'
import { PhpOpaque, PhpUnserializeError } from './php-unserialize.ts'
import { sessionLoginKey, sessionPasswordHashKey } from './session-guard.ts'
import { readSessionPayload, SessionPayloadError } from './session-payload.ts'

const { current, previous } = fixtures.keys

const refusal = (run: () => unknown): SessionPayloadError => {
  try {
    run()
  } catch (error) {
    if (error instanceof SessionPayloadError) return error
    throw error
  }
  throw new Error('expected a SessionPayloadError')
}

// What make-fixtures.php stored as the session's attributes.
const expected = new Map<string | number, unknown>([
  ['_token', 'Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7'],
  [
    '_previous',
    new Map([
      ['url', 'https://app.example.test/dashboard'],
      ['route', 'dashboard'],
    ]),
  ],
  [
    '_flash',
    new Map([
      ['old', new Map()],
      ['new', new Map()],
    ]),
  ],
  [sessionLoginKey(), 42],
  [sessionPasswordHashKey(), fixtures.passwordMac],
  ['url', new Map([['intended', 'https://app.example.test/café']])],
])

describe('readSessionPayload', () => {
  it("reads the database driver's payload, a flashed error bag standing as an opaque object", () => {
    const attributes = readSessionPayload(fixtures.sessions.plain)
    expect(attributes.get('errors')).toEqual(new PhpOpaque('object', 'Illuminate\\Support\\ViewErrorBag'))
    attributes.delete('errors')
    expect(attributes).toEqual(expected)
  })

  it('reads a payload encrypted under SESSION_ENCRYPT with the keys, and only with them', () => {
    expect(readSessionPayload(fixtures.sessions.encrypted, { keys: [previous, current] })).toEqual(expected)
    expect(refusal(() => readSessionPayload(fixtures.sessions.encrypted)).message).toContain(
      'no key was given',
    )
    const wrongKey = refusal(() => readSessionPayload(fixtures.sessions.encrypted, { keys: [previous] }))
    expect(wrongKey.cause).toBeInstanceOf(LaravelDecryptError)
    expect((wrongKey.cause as LaravelDecryptError).reason).toBe('no-key')
  })

  it('reads a payload of session.serialization = json', () => {
    expect(readSessionPayload(fixtures.sessions.json, { serialization: 'json' })).toEqual(expected)
  })

  it('refuses a payload that is not an array of attributes, or not serialized data', () => {
    const base64 = (text: string) => Buffer.from(text).toString('base64')
    expect(refusal(() => readSessionPayload(base64('s:3:"abc";'))).message).toContain('not an array')
    expect(refusal(() => readSessionPayload(base64('a:1:{'))).cause).toBeInstanceOf(PhpUnserializeError)
    expect(
      refusal(() => readSessionPayload(base64('{"a":'), { serialization: 'json' })).cause,
    ).toBeInstanceOf(SyntaxError)
    const encryptedList = base64(encryptLaravel(serializePhp(['not a string']), current))
    expect(refusal(() => readSessionPayload(encryptedList, { keys: [current] })).message).toContain(
      'not a string',
    )
  })
})
