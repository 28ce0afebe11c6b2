import { describe, expect, it } from 'vitest'
import { laravelFixtures as fixtures, phpValues } from './fixtures/laravel-fixtures.ts'
import { type PhpSerializable, serializePhp } from './php-serialize.ts'
import { PhpOpaque, type PhpValue, unserializePhp } from './php-unserialize.ts'

// The fixtures holding no object, enum or reference: plain data, which serializePhp writes.
const plain = Object.entries(fixtures.serialized).filter(([name]) => {
  const holdsOpaque = (value: PhpValue): boolean =>
    value instanceof PhpOpaque || (value instanceof Map && [...value.values()].some(holdsOpaque))
  return !holdsOpaque(phpValues[name] ?? null)
})

describe('serializePhp', () => {
  it('covers most of the fixtures', () => {
    expect(plain.length).toBeGreaterThanOrEqual(14)
  })

  it.each(plain)('writes what PHP serialize() wrote: %s', (name, text) => {
    expect(serializePhp(phpValues[name] as PhpSerializable)).toBe(text)
  })

  it('writes JS lists and objects as PHP arrays, numeric keys as ints', () => {
    expect(serializePhp(['a', 'b'])).toBe('a:2:{i:0;s:1:"a";i:1;s:1:"b";}')
    expect(serializePhp({ _token: 'abc', '42': true, '007': null })).toBe(
      'a:3:{i:42;b:1;s:6:"_token";s:3:"abc";s:3:"007";N;}',
    )
    expect(unserializePhp(serializePhp({ nested: [{ é: 1.5 }] }))).toEqual(
      new Map([['nested', new Map([[0, new Map([['é', 1.5]])]])]]),
    )
  })

  it('writes a Fortify secret as encrypt() serializes it', () => {
    expect(serializePhp('JBSWY3DPEHPK3PXP')).toBe('s:16:"JBSWY3DPEHPK3PXP";')
  })
})
