import { describe, expect, it } from 'vitest'
import { decryptLaravel, encryptLaravel, LaravelDecryptError } from './encrypter.ts'
import { laravelFixtures as fixtures } from './fixtures/laravel-fixtures.ts'
import { laravelKeyBytes, laravelKeys } from './keys.ts'
import { serializePhp } from './php-serialize.ts'
import { unserializePhp } from './php-unserialize.ts'

const { current, previous, aes128 } = fixtures.keys
const keysFor = (name: string) => (name === 'aes128' ? [aes128] : [current, previous])

const fields = (payload: string) => JSON.parse(Buffer.from(payload, 'base64').toString('utf8'))
const rebuilt = (payload: string, change: (json: Record<string, unknown>) => void) => {
  const json = fields(payload)
  change(json)
  return Buffer.from(JSON.stringify(json)).toString('base64')
}
const refusal = (run: () => unknown): LaravelDecryptError => {
  try {
    run()
  } catch (error) {
    if (error instanceof LaravelDecryptError) return error
    throw error
  }
  throw new Error('expected a LaravelDecryptError')
}
const flip = (text: string, at = 0) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1)

const label = (f: (typeof fixtures.encrypted)[number]) =>
  `${f.cipher} under the ${f.key} key, ${f.value.length} characters${f.serialize ? ' serialized' : ''}`

const cbc = fixtures.encrypted.find((f) => f.cipher === 'AES-256-CBC' && f.key === 'current')
const gcm = fixtures.encrypted.find((f) => f.cipher === 'AES-256-GCM' && f.key === 'current')
if (!cbc || !gcm) throw new Error('fixtures lack a CBC or GCM payload')

describe('decryptLaravel', () => {
  it("opens the fixed payload of laravel/framework's EncrypterTest, choosing the key by its MAC", () => {
    // testItValidatesMacOnPerKeyBasis: made under 'b' x 16 (AES-128-CBC). Under 'a' x 16 it would
    // decrypt to bytes of noise; only the MAC tells the keys apart.
    const payload =
      'eyJpdiI6Ilg0dFM5TVRibEFqZW54c3lQdWJoVVE9PSIsInZhbHVlIjoiRGJpa2p2ZHI3eUs0dUtRakJneUhUUT09IiwibWFjIjoiMjBjZWYxODdhNThhOTk4MTk1NTc0YTE1MDgzODU1OWE0ZmQ4MDc5ZjMxYThkOGM1ZmM1MzlmYzBkYTBjMWI1ZiIsInRhZyI6IiJ9'
    expect(decryptLaravel(payload, ['a'.repeat(16), 'b'.repeat(16)])).toBe('foo')
    expect(refusal(() => decryptLaravel(payload, ['a'.repeat(16)])).reason).toBe('no-key')
  })

  it.each(fixtures.encrypted.map((f) => [label(f), f] as const))(
    'opens what Laravel encrypted: %s',
    (_, fixture) => {
      const plaintext = decryptLaravel(fixture.payload, keysFor(fixture.key))
      expect(fixture.serialize ? unserializePhp(plaintext) : plaintext).toBe(fixture.value)
    },
  )

  it('reads a Fortify secret and its recovery codes as encrypt() stored them', () => {
    const [secret, codes] = fixtures.encrypted
    expect(unserializePhp(decryptLaravel(secret?.payload ?? '', [current]))).toBe('JBSWY3DPEHPK3PXP')
    const json = unserializePhp(decryptLaravel(codes?.payload ?? '', [current]))
    expect(JSON.parse(String(json))).toEqual(['Xb3kQ9vLmT-Pw7sN2cYhJ', 'aR5tK8nWqE-Zd4fG6uBvM'])
  })

  it('opens a value of a previous key once that key is listed after APP_KEY', () => {
    for (const fixture of fixtures.encrypted.filter((f) => f.key === 'previous')) {
      expect(refusal(() => decryptLaravel(fixture.payload, [current])).reason).toBe('no-key')
      expect(unserializePhp(decryptLaravel(fixture.payload, [current, previous]))).toBe(fixture.value)
      expect(unserializePhp(decryptLaravel(fixture.payload, laravelKeys(current, `${previous},`)))).toBe(
        fixture.value,
      )
    }
  })

  it('refuses every fixture under a key that did not make it', () => {
    const stranger = `base64:${Buffer.alloc(32, 7).toString('base64')}`
    for (const fixture of fixtures.encrypted.filter((f) => f.key !== 'aes128')) {
      expect(refusal(() => decryptLaravel(fixture.payload, [stranger])).reason).toBe('no-key')
    }
  })

  it('refuses a CBC payload whose MAC or value was altered', () => {
    const mac = rebuilt(cbc.payload, (json) => {
      json.mac = flip(String(json.mac), 10)
    })
    const value = rebuilt(cbc.payload, (json) => {
      json.value = flip(String(json.value), 3)
    })
    const shortMac = rebuilt(cbc.payload, (json) => {
      json.mac = String(json.mac).slice(0, 32)
    })
    for (const payload of [mac, value, shortMac]) {
      expect(refusal(() => decryptLaravel(payload, [current])).reason).toBe('no-key')
    }
  })

  it('refuses a GCM payload whose tag or value was altered', () => {
    const tag = rebuilt(gcm.payload, (json) => {
      json.tag = flip(String(json.tag))
    })
    const value = rebuilt(gcm.payload, (json) => {
      json.value = flip(String(json.value), 2)
    })
    for (const payload of [tag, value]) {
      expect(refusal(() => decryptLaravel(payload, [current])).reason).toBe('no-key')
    }
  })

  it('refuses a GCM tag that is not 16 bytes long, shorter or longer', () => {
    const full = Buffer.from(fields(gcm.payload).tag, 'base64')
    // 3 bytes is what Laravel's testThatAnAeadTagMustBeProvidedInFullLength leaves (4 base64 characters).
    for (const tag of [
      full.subarray(0, 3),
      full.subarray(0, 12),
      full.subarray(0, 15),
      Buffer.concat([full, full]),
    ]) {
      const payload = rebuilt(gcm.payload, (json) => {
        json.tag = tag.toString('base64')
      })
      const error = refusal(() => decryptLaravel(payload, [current]))
      expect(error.reason).toBe('malformed')
      expect(error.message).toContain('16 bytes')
    }
  })

  it('opens a CBC payload of Laravel before 9, which had no tag field', () => {
    const legacy = rebuilt(cbc.payload, (json) => {
      delete json.tag
    })
    expect(unserializePhp(decryptLaravel(legacy, [current]))).toBe(cbc.value)
  })

  it.each([
    ['not base64 of JSON', 'not a payload'],
    ['a JSON list', Buffer.from('[1,2]').toString('base64')],
    ['JSON null', Buffer.from('null').toString('base64')],
    ['no mac', Buffer.from('{"iv":"","value":""}').toString('base64')],
    // Laravel's EncrypterTest::provideTamperedData
    ['an iv that is a list', rebuilt(cbc.payload, (json) => (json.iv = ['value_in_array']))],
    ['a value that is an object', rebuilt(cbc.payload, (json) => (json.value = {}))],
    ['a mac that is null', rebuilt(cbc.payload, (json) => (json.mac = null))],
    ['a tag that is a number', rebuilt(cbc.payload, (json) => (json.tag = -1))],
    // testExceptionThrownWhenIvIsTooLong: the value's first character moved onto the iv
    [
      'an iv too long',
      rebuilt(cbc.payload, (json) => {
        json.iv = String(json.iv) + String(json.value)[0]
        json.value = String(json.value).slice(1)
      }),
    ],
    [
      'an iv not in strict base64',
      rebuilt(cbc.payload, (json) => (json.iv = `${String(json.iv).slice(0, -2)}!=`)),
    ],
    [
      'a GCM iv of CBC length',
      rebuilt(gcm.payload, (json) => (json.iv = Buffer.alloc(16).toString('base64'))),
    ],
  ])('refuses as malformed: %s', (_, payload) => {
    expect(refusal(() => decryptLaravel(payload, [current])).reason).toBe('malformed')
  })
})

describe('encryptLaravel', () => {
  it.each(fixtures.encrypted.map((f) => [label(f), f] as const))(
    "writes Laravel's payload byte for byte given its iv: %s",
    (_, fixture) => {
      const plaintext = fixture.serialize ? serializePhp(fixture.value) : fixture.value
      const mode = fixture.cipher.endsWith('GCM') ? 'gcm' : 'cbc'
      const iv = Buffer.from(fields(fixture.payload).iv, 'base64')
      expect(encryptLaravel(plaintext, fixtures.keys[fixture.key], { mode, iv })).toBe(fixture.payload)
    },
  )

  it('makes a fresh iv each time, and what it makes opens again, in each mode and size', () => {
    for (const key of [current, aes128, 'c'.repeat(32)]) {
      for (const mode of ['cbc', 'gcm'] as const) {
        const first = encryptLaravel('s:5:"héllo";', key, { mode })
        expect(encryptLaravel('s:5:"héllo";', key, { mode })).not.toBe(first)
        expect(decryptLaravel(first, [previous, key])).toBe('s:5:"héllo";')
        const json = fields(first)
        expect(Object.keys(json)).toEqual(['iv', 'value', 'mac', 'tag'])
        expect(mode === 'cbc' ? json.tag : json.mac).toBe('')
      }
    }
  })
})

describe('laravelKeys', () => {
  it("reads APP_KEY's base64: form and a raw key, and APP_PREVIOUS_KEYS as Laravel splits it", () => {
    expect(laravelKeyBytes(current)).toHaveLength(32)
    expect(laravelKeyBytes('b'.repeat(16))).toEqual(Buffer.from('b'.repeat(16)))
    expect(laravelKeys(current)).toEqual([current])
    expect(laravelKeys(current, `${previous},,${aes128}`)).toEqual([current, previous, aes128])
  })

  it('refuses a key of another length at once', () => {
    expect(() => laravelKeys(current, 'base64:c2hvcnQ=')).toThrow(RangeError)
    expect(() => laravelKeyBytes('z'.repeat(33))).toThrow('16 or 32 bytes')
    expect(() => decryptLaravel(cbc.payload, ['short'])).toThrow(RangeError)
  })
})
